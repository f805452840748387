//! Execution-time policy: the write rules and the transaction guard for what arrives after a
//! statement was decided — a prepared write's bound values (COM_STMT_EXECUTE, MariaDB's bulk
//! execute, SQL-level `EXECUTE … USING`) and a LOAD DATA file's rows. Every path ends in one
//! `Verdict`: refuse (one ERR), or run with these notes and this transaction partition.
//!
//! Pure: the values come in as `Bound`s the session read from its packets; no I/O.

use super::prefix_scan::ConnCharset;
use super::refusal::Refusal;
use super::write::{self, Bound, Checked, Gathered, Place, Txn, WritePlan, WriteRules};
use crate::hbase::rules::Finding;

/// What the session knows when an execution arrives.
#[derive(Debug, Clone, Copy)]
pub struct ExecContext<'a> {
    pub rules: &'a WriteRules,
    /// The connection's character set, when read (how text values become bytes).
    pub conn: Option<ConnCharset>,
    /// Whether the backend reads `\` as an escape (NO_BACKSLASH_ESCAPES), when it says.
    pub backslash_escape: Option<bool>,
    /// The session's transaction as the guard sees it.
    pub txn: &'a Txn,
}

/// What the session carries out for one execution.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Refused with this error (nothing reaches the backend).
    pub refuse: Option<Refusal>,
    /// Warnings and notes the statement runs with (SHOW WARNINGS, and counted in its OK).
    pub notes: Vec<Finding>,
    /// Inside a transaction, the partition the execution fixes (its first write).
    pub pin: Option<Place>,
    /// Where the execution's rows are (its rows' partitions and keys), for the rowkey advisor
    /// (`write::observed`).
    pub touch: Option<write::Touch>,
    /// The rows it writes, for the rowkey advisor.
    pub rows: write::RowsSeen,
}

impl Verdict {
    /// The cell rules by their enforcement, then the guard against the transaction.
    fn of(checked: Checked, ctx: &ExecContext) -> Verdict {
        let out = write::verdict(checked, ctx.rules, ctx.txn);
        Verdict {
            refuse: out.refuse.map(Refusal::Rule),
            notes: out.warnings,
            pin: out.pin,
            touch: out.touch,
            rows: out.rows,
        }
    }
}

/// One execution of a prepared write. `bound`: its values by placeholder position; None when
/// the statement has no placeholders (its literals were checked when it was prepared, and the
/// execution is placed for the guard).
pub fn decide_execution<'a>(
    plan: &WritePlan,
    bound: Option<&dyn Fn(u32) -> Bound<'a>>,
    ctx: &ExecContext,
) -> Verdict {
    let none = |_| Bound::Other;
    let bound: &dyn Fn(u32) -> Bound<'a> = bound.unwrap_or(&none);
    let checked = write::check_execution(plan, bound, ctx.rules, ctx.conn, ctx.backslash_escape, 0);
    Verdict::of(checked, ctx)
}

/// A bulk execution (MariaDB's COM_STMT_BULK_EXECUTE), row by row: `row` for each row of
/// values (false: stop, a row already refuses the execution), then `finish`.
pub struct BulkExecution<'p> {
    plan: &'p WritePlan,
    gathered: Gathered,
    /// Rows of the statement per row of values (an INSERT of several VALUES rows).
    per_row: usize,
    n: usize,
}

impl<'p> BulkExecution<'p> {
    pub fn new(plan: &'p WritePlan) -> Self {
        let per_row = match &plan.shape {
            write::Shape::Insert { rows, .. } => rows.len().max(1),
            write::Shape::Dml(_) | write::Shape::Assigned(_) => 1,
        };
        BulkExecution {
            plan,
            gathered: Gathered::new()
                .with_partitions(plan.schema.partitioning.partition_count() as usize),
            per_row,
            n: 0,
        }
    }

    /// One row of values; false once the execution is refused (the rest need not be read).
    pub fn row<'a>(&mut self, bound: &dyn Fn(u32) -> Bound<'a>, ctx: &ExecContext) -> bool {
        let first_row = self.n.saturating_mul(self.per_row);
        let c = write::check_execution(
            self.plan,
            bound,
            ctx.rules,
            ctx.conn,
            ctx.backslash_escape,
            first_row,
        );
        self.gathered.add(c);
        self.n += 1;
        !self.gathered.refused(ctx.rules)
    }

    /// The verdict on every row read; `unreadable`: a row could not be read.
    pub fn finish(self, unreadable: bool, ctx: &ExecContext) -> Verdict {
        let checked = self.gathered.finish(&self.plan.schema.name, unreadable);
        Verdict::of(checked, ctx)
    }
}

/// A LOAD DATA whose file's rows were checked as they streamed (`write::LoadCheck`).
pub fn decide_load(checked: Checked, ctx: &ExecContext) -> Verdict {
    Verdict::of(checked, ctx)
}

/// A LOAD DATA on `table` whose rows the proxy never sees (`why`: the client does not send
/// files through it).
pub fn decide_unseen_load(table: &str, why: &'static str, ctx: &ExecContext) -> Verdict {
    Verdict::of(write::load_unchecked(table, why), ctx)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::hbase::rules::Rule;

    use super::*;
    use crate::config::Transactions;
    use crate::engine::router::{decide, Context, Decision, Origin};
    use crate::hbase::cells::Convention;
    use crate::hbase::rules::Enforcement;
    use crate::hbase::schema::TableSchema;
    use crate::protocol::constants::er;

    const NOW: i64 = 1_763_700_000_000;

    /// A Context builder for execution-time tests, as PgDog's router tests build theirs.
    struct Exec {
        rules: WriteRules,
        txn: Txn,
    }

    impl Exec {
        fn new() -> Self {
            Exec {
                rules: WriteRules {
                    now_ms: NOW,
                    ..WriteRules::default()
                },
                txn: Txn::default(),
            }
        }
        fn mode(mut self, cells: Enforcement) -> Self {
            self.rules.cells = cells;
            self
        }
        fn in_transaction_at(mut self, pinned: Option<Place>) -> Self {
            self.txn = Txn {
                active: true,
                pinned,
            };
            self
        }
        fn ctx(&self) -> ExecContext<'_> {
            ExecContext {
                rules: &self.rules,
                conn: Some(ConnCharset::Utf8),
                backslash_escape: Some(true),
                txn: &self.txn,
            }
        }
    }

    /// The schema of `hb.g$f` the test view holds (KEY(K_PREFIX), n = 4, 13 partitions).
    fn schema() -> Arc<TableSchema> {
        let view = crate::engine::prefix_scan::tests::view();
        match view
            .cache
            .get(&crate::hbase::schema::key(b"hb", b"g$f", false))
        {
            crate::hbase::schema::Lookup::Known(Some(s)) => s,
            other => panic!("{other:?}"),
        }
    }

    /// The plan the router makes of a prepared statement's text on `hb.g$f` (the schema of
    /// `schema()`).
    fn plan(sql: &str) -> WritePlan {
        let ctx = Context {
            tables: Some(crate::engine::prefix_scan::tests::view()),
            writes: Some(WriteRules {
                now_ms: NOW,
                ..WriteRules::default()
            }),
            ..Context::default()
        };
        match decide(sql.as_bytes(), Origin::Prepare, &ctx).1 {
            Decision::Send(w) => *w.plan.expect("a write plan"),
            other => panic!("{sql}: {other:?}"),
        }
    }

    const INSERT: &str = "INSERT INTO hb.g$f (K, Q, T, V) VALUES (?, ?, ?, ?)";

    /// A LOAD DATA LOCAL of K, Q, T, V into `hb.g$f`.
    fn load_plan() -> write::LoadPlan {
        write::LoadPlan {
            load: crate::sql::load::read(
                b"LOAD DATA LOCAL INFILE 'f' INTO TABLE hb.`g$f` (K, Q, T, V)",
                crate::sql::scan::Dialect::default(),
            )
            .expect("reads")
            .expect("a LOAD"),
            schema: schema(),
        }
    }

    fn values<'a>(k: &'a [u8], t: i128, v: Option<&'a [u8]>) -> impl Fn(u32) -> Bound<'a> {
        move |i| match (i, v) {
            (0, _) => Bound::Bytes(k, false),
            (1, _) => Bound::Bytes(b"q", false),
            (2, _) => Bound::Int(t),
            (3, Some(v)) => Bound::Bytes(v, false),
            (3, None) => Bound::Null,
            _ => Bound::Other,
        }
    }

    fn rule_of(v: &Verdict) -> Option<Rule> {
        v.refuse.as_ref().and_then(Refusal::rule)
    }

    #[test]
    fn an_execution_is_judged_by_the_cell_rules() {
        let p = plan(INSERT);
        let e = Exec::new();
        let ok = decide_execution(
            &p,
            Some(&values(b"abcd1", -NOW as i128, Some(b"v"))),
            &e.ctx(),
        );
        assert_eq!(ok.refuse, None, "{ok:?}");
        for (bound, rule, code) in [
            (
                values(b"", -NOW as i128, Some(b"v")),
                Rule::C1,
                er::TRUNCATED_WRONG_VALUE,
            ),
            (
                values(b"abcd1", -NOW as i128, None),
                Rule::C3,
                er::BAD_NULL_ERROR,
            ),
            (
                values(b"abcd1", NOW as i128, Some(b"v")),
                Rule::C4,
                er::TRUNCATED_WRONG_VALUE,
            ),
            (
                values(b"abcd1", -NOW as i128, Some(&[0u8; 40])),
                Rule::C2,
                er::DATA_TOO_LONG,
            ),
        ] {
            let v = decide_execution(&p, Some(&bound), &e.ctx());
            let refusal = v.refuse.clone().unwrap_or_else(|| panic!("{rule}: {v:?}"));
            assert_eq!(refusal.rule(), Some(rule), "{refusal:?}");
            assert_eq!(refusal.to_error().code, code, "{rule}: {refusal:?}");
        }
        // C5, a T that looks like seconds: a note, and the execution runs
        let v = decide_execution(
            &p,
            Some(&values(b"abcd1", -1_763_700_000, Some(b"v"))),
            &e.ctx(),
        );
        assert_eq!(v.refuse, None);
        assert_eq!(
            v.notes.iter().map(|f| f.rule).collect::<Vec<_>>(),
            [Rule::C5]
        );
        // warn mode: the error becomes a warning, nothing is refused
        let warn = Exec::new().mode(Enforcement::Warn);
        let v = decide_execution(
            &p,
            Some(&values(b"", -NOW as i128, Some(b"v"))),
            &warn.ctx(),
        );
        assert_eq!(v.refuse, None);
        assert_eq!(
            v.notes.iter().map(|f| f.rule).collect::<Vec<_>>(),
            [Rule::C1]
        );
        // a value sent in pieces is known by its length only
        let long = |i| {
            if i == 3 {
                Bound::Length(1 << 20)
            } else {
                values(b"abcd1", -NOW as i128, Some(b"v"))(i)
            }
        };
        let v = decide_execution(&p, Some(&long), &e.ctx());
        assert!(rule_of(&v) == Some(Rule::C2), "{v:?}");
    }

    /// A key in another partition than `pin`'s (4-byte prefix).
    fn key_elsewhere(pin: &Place) -> Vec<u8> {
        (b'b'..=b'z')
            .map(|c| vec![c, c, c, c, b'1'])
            .find(|k| schema().partition_of(k) != Some(pin.partition))
            .expect("another partition")
    }

    /// The verdicts of one row on each execution-time path: a binary COM_STMT_EXECUTE, an
    /// `EXECUTE … USING` (values as the session reads them: text), one row of a bulk execute,
    /// one row of a LOAD DATA LOCAL file.
    fn on_every_path(
        k: &[u8],
        t: i128,
        v: Option<&[u8]>,
        e: &Exec,
    ) -> [(&'static str, Verdict); 4] {
        let p = plan(INSERT);
        let binary = values(k, t, v);
        let t_text = t.to_string();
        let using = |i: u32| match i {
            0 => Bound::Text(k),
            1 => Bound::Text(b"q"),
            2 => Bound::Text(t_text.as_bytes()),
            3 => v.map_or(Bound::Null, Bound::Text),
            _ => Bound::Other,
        };
        let mut bulk = BulkExecution::new(&p);
        bulk.row(&binary, &e.ctx());
        let load = load_plan();
        let mut file = write::LoadCheck::new(&load, e.rules);
        let mut row = k.to_vec();
        row.extend_from_slice(format!("\tq\t{t}\t").as_bytes());
        row.extend_from_slice(v.unwrap_or(b"\\N"));
        row.push(b'\n');
        file.feed(&row);
        [
            (
                "COM_STMT_EXECUTE",
                decide_execution(&p, Some(&binary), &e.ctx()),
            ),
            (
                "EXECUTE USING",
                decide_execution(&p, Some(&using), &e.ctx()),
            ),
            ("bulk execute", bulk.finish(false, &e.ctx())),
            ("LOAD DATA rows", decide_load(file.finish(), &e.ctx())),
        ]
    }

    #[test]
    fn every_rule_is_judged_on_every_execution_path() {
        let e = Exec::new();
        let long = [b'x'; 40];
        // the cell rules: refused (strict), or noted
        for (what, k, t, v, rule, refused) in [
            (
                "an empty K",
                &b""[..],
                -NOW as i128,
                Some(&b"v"[..]),
                Rule::C1,
                true,
            ),
            (
                "a V too long",
                b"abcd1",
                -NOW as i128,
                Some(&long[..]),
                Rule::C2,
                true,
            ),
            ("a NULL V", b"abcd1", -NOW as i128, None, Rule::C3, true),
            (
                "a positive T",
                b"abcd1",
                NOW as i128,
                Some(b"v"),
                Rule::C4,
                true,
            ),
            (
                "a T in seconds",
                b"abcd1",
                -1_763_700_000,
                Some(b"v"),
                Rule::C5,
                false,
            ),
        ] {
            for (path, verdict) in on_every_path(k, t, v, &e) {
                let got = if refused {
                    verdict.refuse.as_ref().and_then(Refusal::rule)
                } else {
                    assert_eq!(verdict.refuse, None, "{what} on {path}");
                    verdict.notes.first().map(|f| f.rule)
                };
                assert_eq!(got, Some(rule), "{what} on {path}: {verdict:?}");
            }
        }
        // the guard: a transaction fixed to one partition refuses a row in another (X1)
        let first = Exec::new().in_transaction_at(None);
        let pin = decide_execution(
            &plan(INSERT),
            Some(&values(b"abcd1", -NOW as i128, Some(b"v"))),
            &first.ctx(),
        )
        .pin
        .expect("the first write fixes the partition");
        let elsewhere = key_elsewhere(&pin);
        let pinned = Exec::new().in_transaction_at(Some(pin));
        for (path, verdict) in on_every_path(&elsewhere, -NOW as i128, Some(b"v"), &pinned) {
            assert_eq!(
                verdict.refuse.as_ref().and_then(Refusal::rule),
                Some(Rule::X1),
                "{path}: {verdict:?}"
            );
        }
        // and a row it cannot place (X2): a rowkey of a type the proxy does not read
        let unknown_k = |i: u32| match i {
            0 => Bound::Other,
            i => values(b"abcd1", -NOW as i128, Some(b"v"))(i),
        };
        let p = plan(INSERT);
        let v = decide_execution(&p, Some(&unknown_k), &first.ctx());
        assert_eq!(rule_of(&v), Some(Rule::X2), "{v:?}");
        let mut bulk = BulkExecution::new(&p);
        bulk.row(&unknown_k, &first.ctx());
        let v = bulk.finish(false, &first.ctx());
        assert_eq!(rule_of(&v), Some(Rule::X2), "{v:?}");
        // one statement's rows in two partitions (X3), a bulk execute's and a LOAD file's: a
        // warning by default, refused with strict transactions
        let mut strict = Exec::new();
        strict.rules.transactions = Transactions::Strict;
        for (e, refused) in [(Exec::new(), false), (strict, true)] {
            let mut bulk = BulkExecution::new(&p);
            bulk.row(&values(b"abcd1", -NOW as i128, Some(b"v")), &e.ctx());
            bulk.row(&values(&elsewhere, -NOW as i128, Some(b"v")), &e.ctx());
            let load = load_plan();
            let mut file = write::LoadCheck::new(&load, e.rules);
            let mut rows = format!("abcd1\tq\t{}\tv\n", -NOW).into_bytes();
            rows.extend_from_slice(&elsewhere);
            rows.extend_from_slice(format!("\tq\t{}\tv\n", -NOW).as_bytes());
            file.feed(&rows);
            for v in [
                bulk.finish(false, &e.ctx()),
                decide_load(file.finish(), &e.ctx()),
            ] {
                let got = match refused {
                    true => rule_of(&v),
                    false => v.notes.first().map(|f| f.rule),
                };
                assert_eq!(got, Some(Rule::X3), "{v:?}");
                assert_eq!(v.refuse.is_some(), refused, "{v:?}");
            }
        }
    }

    #[test]
    fn a_t_given_as_a_string_is_read_alike_on_every_path() {
        // the same string for T gives the same finding however it arrives: a binary string
        // parameter, an EXECUTE … USING value (text), a LOAD field, a text literal (router)
        let p = plan(INSERT);
        let e = Exec::new();
        let load = load_plan();
        let now = format!(" {} ", -NOW);
        for (t, want) in [
            ("5", Some(Rule::C4)),
            ("+5", Some(Rule::C4)),
            ("5abc", Some(Rule::C4)),
            ("5.0", Some(Rule::C4)),
            ("", Some(Rule::C4)),
            (now.as_str(), None),
        ] {
            fn with_t<'a>(t: Bound<'a>) -> impl Fn(u32) -> Bound<'a> {
                move |i: u32| match i {
                    2 => t,
                    i => values(b"abcd1", 0, Some(b"v"))(i),
                }
            }
            let bytes = t.as_bytes();
            let mut file = write::LoadCheck::new(&load, e.rules);
            file.feed(format!("abcd1\tq\t{t}\tv\n").as_bytes());
            for (path, v) in [
                (
                    "a string parameter",
                    decide_execution(&p, Some(&with_t(Bound::Bytes(bytes, false))), &e.ctx()),
                ),
                (
                    "EXECUTE USING",
                    decide_execution(&p, Some(&with_t(Bound::Text(bytes))), &e.ctx()),
                ),
                ("a LOAD field", decide_load(file.finish(), &e.ctx())),
            ] {
                assert_eq!(rule_of(&v), want, "T {t:?} as {path}: {v:?}");
            }
        }
    }

    #[test]
    fn an_execution_is_kept_in_the_transactions_partition() {
        let p = plan(INSERT);
        let first = Exec::new().in_transaction_at(None);
        let v = decide_execution(
            &p,
            Some(&values(b"abcd1", -NOW as i128, Some(b"v"))),
            &first.ctx(),
        );
        let pin = v.pin.clone().expect("the first write fixes the partition");
        // the same prefix: fine; another partition: X1
        let then = Exec::new().in_transaction_at(Some(pin.clone()));
        let same = decide_execution(
            &p,
            Some(&values(b"abcd2", -NOW as i128, Some(b"v"))),
            &then.ctx(),
        );
        assert_eq!(same.refuse, None, "{same:?}");
        let other = (b'b'..=b'z')
            .map(|c| vec![c, c, c, c])
            .find(|k| schema().partition_of(k) != Some(pin.partition))
            .expect("another partition");
        let v = decide_execution(
            &p,
            Some(&values(&other, -NOW as i128, Some(b"v"))),
            &then.ctx(),
        );
        let refusal = v.refuse.expect("refused");
        assert_eq!(refusal.rule(), Some(Rule::X1), "{refusal:?}");
        assert_eq!(refusal.to_error().code, er::NOT_SUPPORTED_YET);
        // lax transactions: a warning instead
        let mut lax = Exec::new().in_transaction_at(Some(pin));
        lax.rules.transactions = Transactions::Warn;
        let v = decide_execution(
            &p,
            Some(&values(&other, -NOW as i128, Some(b"v"))),
            &lax.ctx(),
        );
        assert_eq!(v.refuse, None);
        assert_eq!(v.notes.len(), 1, "{v:?}");
    }

    #[test]
    fn a_bulk_execution_judges_every_row_and_stops_at_a_refusal() {
        let p = plan(INSERT);
        let e = Exec::new();
        let mut bulk = BulkExecution::new(&p);
        assert!(bulk.row(&values(b"abcd1", -NOW as i128, Some(b"v")), &e.ctx()));
        assert!(bulk.row(&values(b"abcd2", -NOW as i128, Some(b"v")), &e.ctx()));
        assert!(
            !bulk.row(&values(b"", -NOW as i128, Some(b"v")), &e.ctx()),
            "C1 stops it"
        );
        let v = bulk.finish(false, &e.ctx());
        assert!(v
            .refuse
            .is_some_and(|r| r.rule() == Some(Rule::C1) && r.to_error().message.contains("row 3")));
        // DEFAULT for K (MariaDB's indicator): an absent rowkey
        let mut bulk = BulkExecution::new(&p);
        let default_k = |i| {
            if i == 0 {
                Bound::Default
            } else {
                values(b"x", -NOW as i128, Some(b"v"))(i)
            }
        };
        bulk.row(&default_k, &e.ctx());
        let v = bulk.finish(false, &e.ctx());
        assert!(rule_of(&v) == Some(Rule::C1), "{v:?}");
        // a row the session could not read: a note, and in a transaction it cannot be placed
        let tx = Exec::new().in_transaction_at(None);
        let mut bulk = BulkExecution::new(&p);
        bulk.row(&values(b"abcd1", -NOW as i128, Some(b"v")), &tx.ctx());
        let v = bulk.finish(true, &tx.ctx());
        assert!(rule_of(&v) == Some(Rule::X2), "{v:?}");
    }

    #[test]
    fn a_load_whose_rows_are_not_seen_is_judged_like_one_that_cannot_be_read() {
        let e = Exec::new();
        // outside a transaction: runs, with a note that its rows were not checked
        let v = decide_unseen_load("g$f", "the client does not send files", &e.ctx());
        assert_eq!(v.refuse, None);
        assert_eq!(
            v.notes.iter().map(|f| f.rule).collect::<Vec<_>>(),
            [Rule::C8]
        );
        // inside one: its partition is unknown, refused
        let tx = Exec::new().in_transaction_at(None);
        let v = decide_unseen_load("g$f", "the client does not send files", &tx.ctx());
        assert!(rule_of(&v) == Some(Rule::X2), "{v:?}");
    }

    #[test]
    fn an_execution_without_values_is_placed_for_the_guard() {
        let p = plan("INSERT INTO hb.g$f (K, Q, T, V) VALUES ('abcd1', 'q', -1763700000000, 'v')");
        let tx = Exec::new().in_transaction_at(None);
        let v = decide_execution(&p, None, &tx.ctx());
        assert_eq!(v.refuse, None, "{v:?}");
        assert!(v.pin.is_some());
    }

    #[test]
    fn convention_ms_accepts_positive_t() {
        let p = plan(INSERT);
        let mut e = Exec::new();
        e.rules.convention = Convention::Ms;
        let v = decide_execution(
            &p,
            Some(&values(b"abcd1", NOW as i128, Some(b"v"))),
            &e.ctx(),
        );
        assert_eq!(v.refuse, None, "{v:?}");
    }
}
