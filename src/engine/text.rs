//! One text's statements, each decided by a handler for its kind, in the order they run.
//!
//! `decide_pieces` walks the statements of one reading of a text (`router` chooses the
//! readings); each statement is read as it runs (`read::read_executed`: through `SET STATEMENT
//! … FOR`, `ANALYZE`, stored programs) and handed to the handler of its kind, which adds to
//! what the text gathers (`Text`: splices, facts needed, the write stage, the transaction as
//! it runs) or ends the text's decision (`Flow`). A refused statement of a multi-statement text
//! ends the text there: the statements before it run (`Text::stop_at`).

use std::collections::HashMap;

use super::decision::{
    refuse, Activity, Alone, Answer, Context, Decision, DynamicCheck, DynamicSource, DynamicSql,
    Observation, Origin, Outbound, Refusal, TableUse, Unchecked, Unreadable,
};
use super::prefix_scan::{self, Counters, Need, Step, TableView};
use super::read::*;
use super::rewrite;
use super::write::{self, Touch, Txn, WriteRules};
use crate::hbase::rules::{Level, Note, Rule};
use crate::protocol::constants::er;
use crate::sql::ddl::TableName;
use crate::sql::dml;
use crate::sql::dynamic::Source;
use crate::sql::scan::{self, Dialect, Piece, Scanner, Tok};
use crate::sql::splice::Splice;

/// How the text of a PREPARE / EXECUTE IMMEDIATE inside a text is checked: the router's
/// `decide_dynamic` (its DDL, for a prepare) and `check_dynamic` (the write rules), which read
/// that text with these same handlers. Passed in, so this file does not import the router.
pub(super) struct Dynamic {
    pub decide: fn(&[u8], &Context) -> Option<Refusal>,
    pub check: fn(&[u8], &Context) -> DynamicCheck,
}

/// How a text's statements are read.
pub(super) struct Reading<'a> {
    /// The tokens its split kept.
    pub kept: &'a scan::Kept,
    /// Its one statement, read already: a repeat of a kept text (`sql::repeat`).
    pub given: Option<crate::sql::repeat::Lent>,
    /// Nothing in the text is ambiguous: its one statement's reading may be kept for texts
    /// that repeat it (`sql::repeat::keep`).
    pub repeat: bool,
}

/// The decision on one reading of a text, and the rewriter's counts for it.
pub(super) fn decide_pieces(
    sql: &[u8],
    pieces: &[Piece],
    reading: Reading<'_>,
    (origin, ctx, d): (Origin, &Context, Dialect),
    dynamic: &Dynamic,
    activity: &mut Activity,
) -> (Decision, Tally) {
    let mut text = Text {
        dynamic,
        sql,
        pieces,
        kept: reading.kept,
        repeat: reading.repeat && reading.given.is_none() && pieces.len() == 1,
        given: reading.given,
        origin,
        ctx,
        d,
        many: pieces.len() > 1,
        computed: Vec::new(),
        locked: Vec::new(),
        first_mentions: None,
        splice: Splice::new(),
        need: Need::default(),
        needs: false,
        note: None,
        prepared: None,
        writes: WriteState {
            txn: ctx.txn.clone(),
            ..WriteState::default()
        },
        tally: Tally::default(),
        activity,
    };
    let decision = text.run();
    let tally = std::mem::take(&mut text.tally);
    let rewrote = match &decision {
        Decision::Send(s) => s.text.is_some(),
        Decision::Need(n) => n.variables.is_empty(),
        _ => false,
    };
    if rewrote {
        (decision, tally)
    } else {
        (decision, tally.not_rewritten(text.activity))
    }
}

/// After one statement: the next one, or the text's decision.
enum Flow {
    Next,
    /// The text's decision, whatever the other statements are.
    Done(Box<Decision>),
    /// This statement is refused: the ones before it run (`Text::stop_at`).
    Refuse(Refusal),
}

/// What the statements read so far gathered.
struct Text<'a> {
    dynamic: &'a Dynamic,
    sql: &'a [u8],
    pieces: &'a [Piece],
    kept: &'a scan::Kept,
    /// The first statement's reading, given (`Reading::Given`).
    given: Option<crate::sql::repeat::Lent>,
    /// The one statement's reading may be kept for texts that repeat it (`Reading::Kept`).
    repeat: bool,
    origin: Origin,
    ctx: &'a Context,
    d: Dialect,
    many: bool,
    /// The expressions whose values (dynamic SQL texts) the session reads before the text runs.
    computed: Vec<Vec<u8>>,
    /// LOCK TABLES: tables whose catalog entries are read first.
    locked: Vec<TableName>,
    /// Where each user variable is first mentioned, computed once (one pass) when needed.
    first_mentions: Option<HashMap<Vec<u8>, usize>>,
    splice: Splice,
    need: Need,
    needs: bool,
    note: Option<String>,
    prepared: Option<Box<prefix_scan::PreparedPlan>>,
    /// The write stage: what the text's writes get, and the transaction as it runs.
    writes: WriteState,
    tally: Tally,
    /// What the text does to HBase tables (the caller's buffers).
    activity: &'a mut Activity,
}

/// Statement `i` of the text as it runs: its read, and the part of the text it is (offsets of
/// reads and splices are that part's).
struct At<'a> {
    i: usize,
    piece: &'a [u8],
    run: Piece,
}

impl<'a> Text<'a> {
    /// Each statement to its handler; the text's decision (what it takes is taken out of
    /// `self`).
    fn run(&mut self) -> Decision {
        let (sql, d, ctx) = (self.sql, self.d, self.ctx);
        for (i, p) in self.pieces.iter().enumerate() {
            // (a reading lent by `sql::repeat` is put back once the statement is decided)
            let (read, run, lent) = match self.given.take() {
                Some(l) => (Read::Dml(l.dml), *p, Some(l.stamp)),
                None => {
                    let (read, run) = read_executed(
                        sql,
                        *p,
                        d,
                        &ctx.scope,
                        ctx.tables.is_some(),
                        Some(self.kept),
                    );
                    (read, run, None)
                }
            };
            let at = At {
                i,
                piece: sql.get(run.start..run.end).unwrap_or_default(),
                run,
            };
            if let (Some(rules), true) = (&ctx.writes, self.many) {
                self.writes.transaction_statement(at.piece, d, rules);
            }
            // (by value: an INSERT's head goes on to its checks, which read on after it)
            let flow = match read {
                Read::Plain => self.hidden_locking_read(&at),
                Read::Dml(x) => {
                    let flow = self.dml(&at, &x);
                    // (kept for texts that repeat this one but for its literal, where it may
                    // be: read whole, not under a wrapper)
                    match (lent, self.repeat && run == *p) {
                        (Some(stamp), _) => crate::sql::repeat::put_back(
                            d,
                            crate::sql::repeat::Lent { dml: x, stamp },
                        ),
                        (None, true) => match self.kept.of(p) {
                            Some(toks) => crate::sql::repeat::keep(sql, d, *p, &toks, x),
                            None => dml::give_back(x),
                        },
                        (None, false) => dml::give_back(x),
                    }
                    flow
                }
                Read::DmlUnreadable(why) => self.unreadable_dml(&at, why),
                Read::Insert(head) => self.insert(&at, head),
                Read::InsertUnreadable(why) => self.unreadable_insert(&at, why),
                Read::Load(l) => self.load(&at, &l),
                Read::LoadUnreadable(why) => self.unreadable_load(why),
                Read::View => self.view(&at),
                Read::Lock(tables) => {
                    self.locked.extend(tables);
                    Flow::Next
                }
                Read::Dynamic(source) => self.dynamic(&at, &source),
                read @ (Read::Hbase(_)
                | Read::Unreadable(_)
                | Read::ProgramWithHbaseDdl
                | Read::ProgramWritesHbase
                | Read::ProgramDynamic
                | Read::ProxyTrigger(_)
                | Read::TriggerOnHbase
                | Read::DropProxyTrigger
                | Read::WrappedDdl
                | Read::WrappedUnsure) => self.ddl_or_program(&at, &read),
            };
            match flow {
                Flow::Next => {}
                Flow::Done(decision) => return *decision,
                Flow::Refuse(e) => return self.stop_at(i, e),
            }
        }
        self.finish()
    }

    /// Every statement passed: what the session sends and carries out.
    fn finish(&mut self) -> Decision {
        if self.needs {
            return Decision::Need(std::mem::take(&mut self.need));
        }
        if !self.computed.is_empty() {
            return Decision::Need(Need {
                variables: std::mem::take(&mut self.computed),
                ..Need::default()
            });
        }
        if !self.locked.is_empty() {
            return Decision::Send(Outbound {
                read_catalog: std::mem::take(&mut self.locked),
                ..Outbound::default()
            });
        }
        let text =
            (!self.splice.is_empty()).then(|| std::mem::take(&mut self.splice).apply(self.sql));
        if self.writes.matters() {
            let w = &mut self.writes;
            return Decision::Send(Outbound {
                text,
                checked: true,
                refused: None,
                notes: std::mem::take(&mut w.notes),
                txn_after: w.txn_changed.then(|| w.txn.pinned.take().map(Box::new)),
                plan: w.plan.take(),
                scan: self.prepared.take(),
                load: w.load.take(),
                read_catalog: Vec::new(),
            });
        }
        // the rewriter's text, or its plan for each execution, or its note
        let mut send = Outbound {
            text,
            ..Outbound::default()
        };
        if send.text.is_none() {
            send.scan = self.prepared.take();
            if let (None, Some(n)) = (&send.scan, self.note.take()) {
                send.notes
                    .push(Note::new(Level::Note, er::UNKNOWN_ERROR, n));
            }
        }
        Decision::Send(send)
    }

    /// Statement `i` of the text is refused: the statements before it run, then the client
    /// gets the refusal (as the backend itself stops a multi-statement text at an error).
    fn stop_at(&mut self, i: usize, e: Refusal) -> Decision {
        if self.needs {
            // an earlier statement's decision is not known yet: read what it needs first
            return Decision::Need(std::mem::take(&mut self.need));
        }
        let Some(before) = i.checked_sub(1).and_then(|j| self.pieces.get(j)) else {
            return Decision::Answer(Answer::Refuse(e));
        };
        let sent = self.sql.get(..before.end).unwrap_or_default();
        let w = &mut self.writes;
        Decision::Send(Outbound {
            text: Some(std::mem::take(&mut self.splice).apply(sent)),
            checked: true,
            refused: Some(Box::new(e)),
            notes: std::mem::take(&mut w.notes),
            txn_after: w.txn_changed.then(|| w.txn.pinned.take().map(Box::new)),
            ..Outbound::default()
        })
    }

    fn need(&mut self, n: Need) -> Flow {
        self.needs = true;
        self.need.merge(n);
        Flow::Next
    }

    fn need_charset(&mut self) -> Flow {
        self.needs = true;
        self.need.charset = true;
        Flow::Next
    }

    /// A prepare of a single statement keeps what its executions are checked with.
    fn prepares_one(&self) -> bool {
        self.origin == Origin::Prepare && !self.many
    }

    /// The write stage's verdict on one statement.
    fn judge(&mut self, checked: write::Checked, rules: &WriteRules) -> Flow {
        match self.writes.judge(checked, rules, self.origin) {
            Err(e) => Flow::Refuse(e),
            Ok(_) => Flow::Next,
        }
    }

    /// `judge`, and what a text's write that may run shows the rowkey advisor (`keys`: its
    /// rowkeys are its rows' own, an INSERT's).
    fn judge_observed(
        &mut self,
        checked: write::Checked,
        rules: &WriteRules,
        table: &std::sync::Arc<crate::hbase::schema::TableSchema>,
        keys: bool,
    ) -> Flow {
        match self.writes.judge(checked, rules, self.origin) {
            Err(e) => Flow::Refuse(e),
            Ok((touch, rows)) => {
                if self.origin == Origin::Text {
                    let room = self.activity.room();
                    for what in write::observed(touch, rows, keys, room) {
                        self.activity.observe(Observation {
                            table: table.clone(),
                            what,
                        });
                    }
                }
                Flow::Next
            }
        }
    }

    /// SELECT, UPDATE, DELETE the DML reader follows: the write stage on writes and locking
    /// reads, then the prefix-scan rewriter.
    fn dml(&mut self, at: &At<'_>, x: &dml::Dml) -> Flow {
        let ctx = self.ctx;
        let Some(view) = &ctx.tables else {
            return Flow::Next;
        };
        // the statement's table, looked up once for the write stage and the rewriter
        let looked_up = prefix_scan::table(x, view);
        // on a plain table, inside a transaction: a locking read of an HBase table in it
        if self.writes.txn.active && matches!(looked_up, Ok(None)) {
            let flow = self.hidden_locking_read(at);
            if !matches!(flow, Flow::Next) {
                return flow;
            }
        }
        // a plain SELECT writes nothing and locks nothing: no write stage
        let writes_rows = x.verb != dml::Verb::Select || x.locking;
        if let (Ok(Some(schema)), false) = (&looked_up, x.explain) {
            let touch = if writes_rows {
                TableUse::Write
            } else {
                TableUse::Read
            };
            self.activity.tables.push((schema.clone(), touch));
            if !writes_rows {
                let escape = self.d.reported_backslash_escape();
                if let Some(what) = prefix_scan::observe_read(x, schema, view.charset, escape) {
                    self.activity.observe(Observation {
                        table: schema.clone(),
                        what,
                    });
                }
            }
        }
        if let (Some(rules), false, true) = (&ctx.writes, x.explain, writes_rows) {
            let checked = match &looked_up {
                Ok(Some(schema)) => {
                    if self.prepares_one() {
                        self.writes.plan = Some(Box::new(write::WritePlan {
                            schema: schema.clone(),
                            shape: write::Shape::Dml(Box::new(x.clone())),
                        }));
                    }
                    write::check_dml(
                        x,
                        schema,
                        rules,
                        view.charset,
                        self.d.reported_backslash_escape(),
                        view.settled,
                    )
                }
                Ok(None) => Ok(write::Checked::default()),
                Err(n) => return self.need(n.clone()),
            };
            match (checked, &looked_up) {
                (Ok(c), Ok(Some(schema))) => {
                    let flow = self.judge_observed(c, rules, schema, false);
                    if !matches!(flow, Flow::Next) {
                        return flow;
                    }
                }
                (Ok(c), _) => {
                    if let Err(e) = self.writes.judge(c, rules, self.origin) {
                        return Flow::Refuse(e);
                    }
                }
                (Err(write::NeedCharset), _) => return self.need_charset(),
            }
        }
        if let (Some(conv), dml::Verb::Select, false) = (ctx.hbase_reads, x.verb, x.locking) {
            if let Ok(Some(schema)) = &looked_up {
                if declares_versions(schema) {
                    let schema = schema.clone();
                    return self.hbase_read(at, x, view, looked_up, &schema, conv);
                }
            }
        }
        if !ctx.rewrite {
            return Flow::Next;
        }
        self.prefix_scan(at, x, view, looked_up)
    }

    /// Reads as HBase sees them (`SET OBKV HBASE_READS = ON`): the table reference becomes a
    /// derived table of the cells within TimeToLive and MaxVersions, the prefix predicate
    /// inside it (a prepared statement's is bound per execution: it is not pinned).
    fn hbase_read(
        &mut self,
        at: &At<'_>,
        x: &dml::Dml,
        view: &TableView,
        looked_up: Result<Option<std::sync::Arc<crate::hbase::schema::TableSchema>>, Need>,
        schema: &crate::hbase::schema::TableSchema,
        conv: crate::hbase::cells::Convention,
    ) -> Flow {
        if x.three_part_name {
            return Flow::Refuse(Refusal::Unchecked(Unchecked::HbaseRead));
        }
        let pin = if self.ctx.rewrite {
            match prefix_scan::plan_looked_up(
                x,
                view,
                looked_up,
                self.d.reported_backslash_escape(),
            ) {
                Step::Need(n) => return self.need(n),
                Step::Splice { text, .. } => Some(text),
                _ => None,
            }
        } else {
            None
        };
        let Some(text) = rewrite::hbase_read_table(at.piece, x, schema, conv, pin.as_deref())
        else {
            return Flow::Refuse(Refusal::Unchecked(Unchecked::HbaseRead));
        };
        let (a, b) = x.table_span;
        self.splice
            .replace(at.run.start + a, at.run.start + b, text);
        if pin.is_some() {
            self.tally.rewritten += 1;
        }
        Flow::Next
    }

    /// The prefix-scan rewriter on a statement the DML reader follows.
    fn prefix_scan(
        &mut self,
        at: &At<'_>,
        x: &dml::Dml,
        view: &TableView,
        looked_up: Result<Option<std::sync::Arc<crate::hbase::schema::TableSchema>>, Need>,
    ) -> Flow {
        let schema = looked_up.as_ref().ok().and_then(Option::clone);
        match prefix_scan::plan_looked_up(x, view, looked_up, self.d.reported_backslash_escape()) {
            Step::Untouched => {}
            Step::Note(n) => self.note = Some(n),
            Step::Declined(why) => {
                tracing::debug!(why = %why, "prefix-scan rewriter declined");
                self.tally.declined += 1;
            }
            Step::Need(n) => return self.need(n),
            Step::Splice { text, .. } => {
                if rewrite::add_prefix_predicate(&mut self.splice, at.run.start, x, text) {
                    self.tally.rewritten += 1;
                    if let Some(schema) = schema {
                        self.activity.tables.push((schema, TableUse::Rewrite));
                    }
                }
            }
            // counted at each execution
            Step::Prepared(mut plan) if self.prepares_one() => {
                // the variant is spliced into the statement's whole text (through an ANALYZE
                // wrapper, whose words hold no placeholder)
                let start = self.pieces.get(at.i).map_or(0, |p| p.start);
                plan.where_end += at.run.start - start;
                self.prepared = Some(plan);
            }
            Step::Prepared(_) => {
                tracing::debug!("prefix-scan rewriter: placeholders outside a prepare");
                self.tally.declined += 1;
            }
        }
        Flow::Next
    }

    /// Inside a transaction, a locking read of an HBase table that sits inside another
    /// statement (`SET @x = (SELECT … FOR UPDATE)`, `DO (…)`, `INSERT INTO plain SELECT … FOR
    /// UPDATE`, a subquery of a write on a plain table): its rows cannot be placed, X2.
    fn hidden_locking_read(&mut self, at: &At<'_>) -> Flow {
        let ctx = self.ctx;
        let (Some(view), Some(rules), true, Origin::Text) = (
            &ctx.tables,
            &ctx.writes,
            self.writes.txn.active,
            self.origin,
        ) else {
            return Flow::Next;
        };
        if !locks_lexically(at.piece, self.d) {
            return Flow::Next;
        }
        match hbase_table_named(at.piece, self.d, view) {
            Ok(None) => Flow::Next,
            Err(n) => self.need(n),
            Ok(Some(schema)) => {
                let checked = write::Checked {
                    rows: Default::default(),
                    findings: Vec::new(),
                    touch: Some(Touch::Unknown {
                        table: schema.name.clone(),
                        why: "a locking read inside another statement",
                    }),
                };
                self.judge(checked, rules)
            }
        }
    }

    /// A statement the DML reader does not follow: an UPDATE in any shape gets the cell rules
    /// on what it assigns; inside a transaction a write or locking read the proxy cannot place
    /// is X2.
    fn unreadable_dml(&mut self, at: &At<'_>, why: &'static str) -> Flow {
        let ctx = self.ctx;
        tracing::debug!(why, "prefix-scan rewriter: statement not read");
        self.tally.unreadable += 1;
        // reads as HBase sees them: a query the proxy cannot filter is not run unfiltered
        if let (Some(_), Some(view)) = (ctx.hbase_reads, &ctx.tables) {
            let first = crate::sql::classify::leading_words(at.piece, 1);
            let query = first
                .first()
                .is_some_and(|w| matches!(w.as_str(), "SELECT" | "WITH" | "TABLE" | "VALUES"))
                || crate::sql::classify::skip_noise(at.piece).starts_with(b"(");
            if query {
                match names_versioned_table(at.piece, self.d, view) {
                    Err(n) => return self.need(n),
                    Ok(true) => return Flow::Refuse(Refusal::Unchecked(Unchecked::HbaseRead)),
                    Ok(false) => {}
                }
            }
        }
        if let (Some(view), Some(rules)) = (&ctx.tables, &ctx.writes) {
            match assigned_cells(at.piece, self.d, view, rules) {
                Assigned::Nothing => {}
                Assigned::Need(n) => return self.need(n),
                Assigned::Checked(checked, plan) => {
                    if self.prepares_one() {
                        self.writes.plan = plan;
                    }
                    return self.judge(checked, rules);
                }
            }
        }
        if let (Some(rules), true, Origin::Text) =
            (&ctx.writes, self.writes.txn.active, self.origin)
        {
            if writes_rows_lexically(at.piece, self.d) {
                let checked = write::Checked {
                    rows: Default::default(),
                    findings: Vec::new(),
                    touch: Some(Touch::Unknown {
                        table: "an HBase table".into(),
                        why,
                    }),
                };
                return self.judge(checked, rules);
            }
        }
        Flow::Next
    }

    /// INSERT / REPLACE the insert reader follows: the cell rules on its rows, T filled in
    /// where the rules say so, and a prepare's plan.
    fn insert(&mut self, at: &At<'_>, head: crate::sql::insert::Head) -> Flow {
        let ctx = self.ctx;
        let (Some(view), Some(rules)) = (&ctx.tables, &ctx.writes) else {
            return Flow::Next;
        };
        let schema = match prefix_scan::table_named(&head.insert.table, view) {
            Ok(Some(s)) => s,
            // into a plain table: its SELECT may lock HBase rows
            Ok(None) => return self.hidden_locking_read(at),
            Err(n) => return self.need(n),
        };
        self.activity.tables.push((schema.clone(), TableUse::Write));
        let fill = match self.origin {
            Origin::Text => write::FillT::Literal,
            Origin::Prepare => write::FillT::Expression,
        };
        let mut own = Splice::new();
        let lexed = self.kept.of(&at.run);
        let checked = write::check_insert_lexed(
            at.piece,
            (lexed.as_deref(), Some(head)),
            self.d,
            &schema,
            rules,
            view.charset,
            view.settled,
            (&mut own, at.run.start, fill),
            None,
        );
        let Ok(mut checked) = checked else {
            return self.need_charset();
        };
        if !own.is_empty() {
            self.tally.rule_edits += 1;
        }
        self.splice.extend(own);
        if self.prepares_one() {
            self.writes.plan = write::plan_insert(at.piece, self.d, schema.clone()).map(Box::new);
            // a readable INSERT without a plan is one too large to keep: its executions could
            // not be checked
            if self.writes.plan.is_none() && !checked.findings.iter().any(|f| f.rule == Rule::C9) {
                checked.findings.push(write::unreadable_write(
                    "prepared INSERT",
                    "more than 65,536 values: its executions could not be checked; prepare \
                     fewer rows per statement",
                ));
            }
        }
        self.judge_observed(checked, rules, &schema, true)
    }

    /// An INSERT the insert reader cannot follow: C9 if it names an HBase table.
    fn unreadable_insert(&mut self, at: &At<'_>, why: &'static str) -> Flow {
        let ctx = self.ctx;
        let (Some(view), Some(rules)) = (&ctx.tables, &ctx.writes) else {
            return Flow::Next;
        };
        match unreadable_write(at.piece, self.d, view, "INSERT", why) {
            Assigned::Nothing => Flow::Next,
            Assigned::Need(n) => self.need(n),
            Assigned::Checked(checked, _) => self.judge(checked, rules),
        }
    }

    /// LOAD DATA into an HBase table: LOCAL with a file format the proxy reads is checked row
    /// by row as the session reads the file; any other is judged unchecked.
    fn load(&mut self, at: &At<'_>, l: &crate::sql::load::Load) -> Flow {
        let ctx = self.ctx;
        let (Some(view), Some(rules)) = (&ctx.tables, &ctx.writes) else {
            return Flow::Next;
        };
        let schema = match prefix_scan::table_named(&l.table, view) {
            Ok(Some(s)) => s,
            Ok(None) => return Flow::Next,
            Err(n) => return self.need(n),
        };
        self.activity.tables.push((schema.clone(), TableUse::Write));
        let unchecked = if !l.local {
            Some("the server reads its file, which obkv-proxy does not see")
        } else if self.origin == Origin::Prepare {
            Some("a prepared LOAD DATA")
        } else if self.many {
            Some("LOAD DATA LOCAL inside a multi-statement text")
        } else {
            l.format.unreadable()
        };
        if let Some(why) = unchecked {
            let checked = write::load_unchecked(&schema.name, why);
            return self.judge(checked, rules);
        }
        if let Some((at_byte, text)) = write::load_fill_t(l, rules) {
            self.tally.rule_edits += 1;
            self.splice.insert(at.run.start + at_byte, text);
        }
        self.writes.wrote = true;
        self.writes.load = Some(Box::new(write::LoadPlan {
            load: l.clone(),
            schema,
        }));
        Flow::Next
    }

    fn unreadable_load(&mut self, why: &str) -> Flow {
        if self.ctx.strict && self.ctx.writes.is_some() {
            return Flow::Done(Box::new(refuse(Refusal::Unreadable(Unreadable::Load(
                why.to_string(),
            )))));
        }
        Flow::Next
    }

    /// CREATE VIEW: a view over an HBase table could take writes the rules do not see.
    fn view(&mut self, at: &At<'_>) -> Flow {
        let ctx = self.ctx;
        if !ctx.strict || ctx.writes.is_none() {
            return Flow::Next;
        }
        let Some(view) = &ctx.tables else {
            return Flow::Done(Box::new(refuse(Refusal::Unchecked(
                Unchecked::UpdatableView,
            ))));
        };
        match hbase_table_named(at.piece, self.d, view) {
            Ok(None) => Flow::Next,
            Ok(Some(_)) => Flow::Done(Box::new(refuse(Refusal::Unchecked(
                Unchecked::UpdatableView,
            )))),
            Err(n) => self.need(n),
        }
    }

    /// HBase DDL, and the wrappers and programs that could hide it or writes.
    fn ddl_or_program(&mut self, at: &At<'_>, read: &Read) -> Flow {
        let ctx = self.ctx;
        let start = self.pieces.get(at.i).map_or(0, |p| p.start);
        let refused = |r: Refusal| Flow::Done(Box::new(refuse(r)));
        match read {
            Read::Hbase(_)
            | Read::Unreadable(_)
            | Read::ProgramWithHbaseDdl
            | Read::ProxyTrigger(_)
                if self.many =>
            {
                refused(Refusal::DdlNotAlone(Alone::InMultiStatement))
            }
            Read::WrappedDdl => refused(Refusal::DdlNotAlone(Alone::UnderSetStatement)),
            Read::WrappedUnsure if ctx.strict && ctx.writes.is_some() => {
                refused(Refusal::Unreadable(Unreadable::Wrapped))
            }
            // one of the proxy's own triggers (a restore): the session makes the proxy's triggers
            // of the table where missing, in its own definition, and answers OK; the text never
            // runs
            Read::ProxyTrigger(table) => Flow::Done(Box::new(Decision::Answer(
                Answer::ProxyTrigger(table.clone()),
            ))),
            Read::Hbase(stmt) if self.origin == Origin::Prepare => {
                Flow::Done(Box::new(match names_hbase_object(stmt, &ctx.scope) {
                    true => refuse(Refusal::DdlPrepared),
                    false => Decision::forward(),
                }))
            }
            // the session carries it out on the whole text: its offsets must be the text's
            Read::Hbase(_) if start > 0 => refused(Refusal::DdlNotAlone(Alone::AfterSemicolon)),
            Read::Hbase(stmt) => Flow::Done(Box::new(Decision::Ddl(stmt.clone()))),
            Read::Unreadable(e) => {
                refused(Refusal::Unreadable(Unreadable::HbaseDdl(Some(e.clone()))))
            }
            Read::ProgramWritesHbase if ctx.strict && ctx.writes.is_some() => {
                refused(Refusal::Unchecked(Unchecked::ProgramWrites))
            }
            Read::ProgramDynamic if ctx.strict && ctx.writes.is_some() => {
                refused(Refusal::Unchecked(Unchecked::ProgramDynamic))
            }
            Read::ProgramWithHbaseDdl if ctx.strict => {
                refused(Refusal::Unchecked(Unchecked::ProgramDdl))
            }
            Read::DropProxyTrigger if ctx.strict => {
                refused(Refusal::Unchecked(Unchecked::ProxyTrigger))
            }
            Read::TriggerOnHbase if ctx.strict && ctx.writes.is_some() => {
                refused(Refusal::Unchecked(Unchecked::TriggerOnHbase))
            }
            _ => Flow::Next,
        }
    }

    /// PREPARE … FROM / EXECUTE IMMEDIATE: its text, as far as it can be known before it runs.
    fn dynamic(&mut self, at: &At<'_>, source: &Source) -> Flow {
        let ctx = self.ctx;
        match source {
            Source::Literal(_) | Source::Computed { .. }
                if !self.many && self.origin == Origin::Text && ctx.writes.is_some() =>
            {
                let Some(head) = crate::sql::dynamic::head(at.piece, self.d) else {
                    return Flow::Done(Box::new(refuse(Refusal::Unreadable(
                        Unreadable::DynamicText,
                    ))));
                };
                let source = match source {
                    Source::Literal(text) => DynamicSource::Literal(text.clone()),
                    Source::Computed { expr, .. } => DynamicSource::Computed(expr.clone()),
                    Source::Fails | Source::Expression => return Flow::Next,
                };
                Flow::Done(Box::new(Decision::Dynamic(Box::new(DynamicSql {
                    source,
                    head,
                }))))
            }
            Source::Literal(text) => {
                let inner = Context {
                    dialect: self.d,
                    ..ctx.clone()
                };
                if self.origin == Origin::Prepare {
                    // the backend prepares no PREPARE; only its DDL is looked at (no recursion)
                    return match (self.dynamic.decide)(text, &inner) {
                        Some(e) => Flow::Done(Box::new(refuse(e))),
                        None => Flow::Next,
                    };
                }
                match (self.dynamic.check)(text, &inner) {
                    DynamicCheck::Runs => Flow::Next,
                    DynamicCheck::Refused(e) => Flow::Done(Box::new(refuse(e))),
                    DynamicCheck::NeedFacts(n) => self.need(n),
                    DynamicCheck::Checked { .. } if ctx.strict => Flow::Done(Box::new(refuse(
                        Refusal::Unchecked(Unchecked::DynamicWriteInText),
                    ))),
                    DynamicCheck::Checked { .. } => Flow::Next,
                }
            }
            Source::Computed { expr, variables } => {
                // a value assigned earlier in the same text is not known before the text runs
                let (sql, d) = (self.sql, self.d);
                let firsts = self
                    .first_mentions
                    .get_or_insert_with(|| variable_first_mentions(sql, d));
                let start = self.pieces.get(at.i).map_or(0, |p| p.start);
                let set_earlier = variables.iter().any(|v| {
                    firsts
                        .get(&normalize_variable(v))
                        .is_some_and(|first| *first < start)
                });
                if ctx.strict && set_earlier {
                    return Flow::Done(Box::new(refuse(Refusal::Unchecked(
                        Unchecked::VariableSetInText,
                    ))));
                }
                if !self.computed.contains(expr) {
                    self.computed.push(expr.clone());
                }
                Flow::Next
            }
            // the backend refuses it by itself: nothing of it runs
            Source::Fails => Flow::Next,
            Source::Expression if ctx.strict => Flow::Done(Box::new(refuse(Refusal::Unchecked(
                Unchecked::DynamicExpression,
            )))),
            Source::Expression => Flow::Next,
        }
    }
}

/// The write stage's state over the statements of one text.
#[derive(Debug, Default)]
struct WriteState {
    /// The transaction as it will be when the statement being read runs.
    txn: Txn,
    /// Whether the text changes what the session must remember of its transaction.
    txn_changed: bool,
    /// Warnings and notes for the client (at most 64).
    notes: Vec<Note>,
    /// A statement of the text wrote (or locked) an HBase table.
    wrote: bool,
    /// A prepared write: what each execution is checked with.
    plan: Option<Box<write::WritePlan>>,
    /// A LOAD DATA LOCAL whose file the session checks.
    load: Option<Box<write::LoadPlan>>,
}

impl WriteState {
    /// Whether the session has anything to carry out besides forwarding.
    fn matters(&self) -> bool {
        self.wrote
            || !self.notes.is_empty()
            || self.txn_changed
            || self.plan.is_some()
            || self.load.is_some()
    }

    /// A statement of a multi-statement text that starts or ends a transaction: the
    /// statements after it run in that state. (A single statement needs none of this: the
    /// backend's status after it says where the transaction stands.)
    fn transaction_statement(&mut self, piece: &[u8], d: Dialect, rules: &WriteRules) {
        if rules.transactions == crate::config::Transactions::Off {
            return;
        }
        let words = leading_words_of(piece, d);
        let is = |w: &[&str]| {
            words.len() >= w.len() && w.iter().zip(&words).all(|(a, b)| b.eq_ignore_ascii_case(a))
        };
        if is(&["BEGIN"]) || is(&["START", "TRANSACTION"]) {
            self.txn = Txn {
                active: true,
                pinned: None,
            };
            self.txn_changed = true;
        } else if (is(&["COMMIT"]) || is(&["ROLLBACK"]))
            && !words.iter().any(|w| w.eq_ignore_ascii_case("TO"))
        {
            // autocommit off: the next statement begins the next transaction
            self.txn.pinned = None;
            self.txn_changed = true;
        } else if is(&["SET"]) || is(&["XA"]) {
            match txn_effect(piece, d) {
                // autocommit off (every statement after it runs in a transaction), XA START
                Some(TxnEffect::Begins) => {
                    self.txn.active = true;
                    self.txn_changed = true;
                }
                // autocommit on commits; XA COMMIT / ROLLBACK ends the XA transaction
                Some(TxnEffect::Ends) => {
                    self.txn = Txn {
                        active: false,
                        pinned: None,
                    };
                    self.txn_changed = true;
                }
                None => {}
            }
        }
    }

    /// The rules' and the guard's verdict on one statement: the refusal, if any; otherwise its
    /// warnings are kept, its partition fixes the transaction's, and where its rows are is
    /// given back.
    fn judge(
        &mut self,
        checked: write::Checked,
        rules: &WriteRules,
        origin: Origin,
    ) -> Result<(Option<Touch>, write::RowsSeen), Refusal> {
        let mut checked = checked;
        if origin == Origin::Prepare {
            // a prepare runs nothing: its literals are checked now, its `?` and its place in
            // the transaction at each execution
            checked.findings.retain(|f| f.rule != Rule::C8);
            checked.touch = None;
        }
        self.wrote |= checked.touch.as_ref().is_some_and(|t| *t != Touch::Nothing);
        let out = write::verdict(checked, rules, &self.txn);
        if let Some(f) = out.refuse {
            return Err(Refusal::Rule(f));
        }
        if let Some(p) = out.pin {
            self.txn.pinned = Some(p);
            self.txn_changed = true;
        }
        for f in out.warnings {
            if self.notes.len() < 64 {
                self.notes.push(Note::from(f));
            }
        }
        Ok((out.touch, out.rows))
    }
}

/// Whether a statement holds a locking clause anywhere (FOR UPDATE, FOR SHARE, LOCK IN SHARE
/// MODE), at any depth.
fn locks_lexically(piece: &[u8], d: Dialect) -> bool {
    let is = |w: &[u8], s: &str| w.eq_ignore_ascii_case(s.as_bytes());
    let mut prev: &[u8] = b"";
    for t in Scanner::new(piece, d).map_while(Result::ok) {
        if t.kind != Tok::Word {
            prev = b"";
            continue;
        }
        let w = t.text(piece);
        if (is(prev, "FOR") && (is(w, "UPDATE") || is(w, "SHARE")))
            || (is(prev, "IN") && is(w, "SHARE"))
        {
            return true;
        }
        prev = w;
    }
    false
}

/// What `assigned_cells` found.
enum Assigned {
    /// Not an UPDATE that runs, or not a write of an HBase table.
    Nothing,
    /// The schemas (or the charset) of its tables are needed first.
    Need(Need),
    /// Checked (the partition unknown), with the plan a prepare keeps.
    Checked(write::Checked, Option<Box<write::WritePlan>>),
}

/// The cell rules on what an UPDATE the DML reader does not follow assigns (joins,
/// subqueries, WITH, explicit partitions, index hints): `sql::assign` finds the SET list in any
/// shape. A SET list it cannot follow, on an HBase table, is C9.
fn assigned_cells(piece: &[u8], d: Dialect, view: &TableView, rules: &WriteRules) -> Assigned {
    let update = match crate::sql::assign::read(piece, d) {
        crate::sql::assign::Read::NotUpdate => return Assigned::Nothing,
        crate::sql::assign::Read::Update(u) => u,
        crate::sql::assign::Read::Unreadable(why) => {
            return unreadable_write(piece, d, view, "UPDATE", why)
        }
    };
    let mut schemas = Vec::with_capacity(update.tables.len());
    let mut need = Need::default();
    for r in &update.tables {
        match prefix_scan::table_named(&r.table, view) {
            Ok(s) => schemas.push(s),
            Err(n) => {
                need.merge(n);
                schemas.push(None);
            }
        }
    }
    if need != Need::default() {
        return Assigned::Need(need);
    }
    if schemas.iter().all(Option::is_none) {
        return Assigned::Nothing;
    }
    match write::check_assigned(&update, &schemas, rules, view.charset, view.settled) {
        Ok(checked) => {
            let plan = write::plan_assigned(&update, &schemas).map(Box::new);
            Assigned::Checked(checked, plan)
        }
        Err(write::NeedCharset) => Assigned::Need(Need {
            charset: true,
            ..Need::default()
        }),
    }
}

/// The family declares versions or a time to live: reads as HBase sees them filter it.
fn declares_versions(t: &crate::hbase::schema::TableSchema) -> bool {
    t.attrs.time_to_live.is_some() || t.attrs.max_versions.is_some()
}

/// Whether a statement names an HBase table that declares versions or a time to live.
fn names_versioned_table(piece: &[u8], d: Dialect, view: &TableView) -> Result<bool, Need> {
    let mut need = Need::default();
    let mut found = false;
    for t in &dollar_names(piece, d) {
        match prefix_scan::table_named(t, view) {
            Ok(Some(s)) => found |= declares_versions(&s),
            Ok(None) => {}
            Err(n) => need.merge(n),
        }
    }
    if need != Need::default() {
        return Err(need);
    }
    Ok(found)
}

/// The first HBase table a statement names (by its `$` identifiers), if any.
fn hbase_table_named(
    piece: &[u8],
    d: Dialect,
    view: &TableView,
) -> Result<Option<std::sync::Arc<crate::hbase::schema::TableSchema>>, Need> {
    let mut need = Need::default();
    let mut hbase = None;
    for t in &dollar_names(piece, d) {
        match prefix_scan::table_named(t, view) {
            Ok(Some(s)) => {
                hbase.get_or_insert(s);
            }
            Ok(None) => {}
            Err(n) => need.merge(n),
        }
    }
    if need != Need::default() {
        return Err(need);
    }
    Ok(hbase)
}

/// A write the readers cannot follow: C9 if it names an HBase table (its partition unknown).
fn unreadable_write(
    piece: &[u8],
    d: Dialect,
    view: &TableView,
    what: &str,
    why: &'static str,
) -> Assigned {
    let schema = match hbase_table_named(piece, d, view) {
        Err(n) => return Assigned::Need(n),
        Ok(None) => return Assigned::Nothing,
        Ok(Some(s)) => s,
    };
    let checked = write::Checked {
        rows: Default::default(),
        findings: vec![write::unreadable_write(what, why)],
        touch: Some(Touch::Unknown {
            table: schema.name.clone(),
            why,
        }),
    };
    Assigned::Checked(checked, None)
}

/// The `$` table names of a statement (`[db.]name`, not followed by a dot), at most 64. One
/// pass over the whole statement with a window of four tokens: no token list is kept.
pub(super) fn dollar_names(piece: &[u8], d: Dialect) -> Vec<TableName> {
    let ident = |t: &scan::Token| matches!(t.kind, Tok::Word | Tok::QuotedIdent);
    let mut out = Vec::new();
    // the window: [db, dot, name, after]; a name is judged once the token after it is known
    let mut w: [Option<scan::Token>; 4] = [None; 4];
    let mut toks = Scanner::new(piece, d).map_while(Result::ok).fuse();
    loop {
        let next = toks.next();
        w = [w[1], w[2], w[3], next];
        if let Some(t) = w[2] {
            let dot_after = w[3].is_some_and(|n| n.is_punct(b'.'));
            if ident(&t) && !dot_after && memchr::memchr(b'$', t.text(piece)).is_some() {
                let schema = match (w[0], w[1]) {
                    (Some(db), Some(dot)) if dot.is_punct(b'.') && ident(&db) => {
                        Some(scan::ident_value(piece, &db))
                    }
                    _ => None,
                };
                let raw_name = scan::ident_small(piece, &t);
                let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                out.push(TableName {
                    schema: schema.as_deref().map(lossy),
                    name: compact_str::CompactString::from_utf8_lossy(&raw_name),
                    raw_schema: schema,
                    raw_name,
                });
                if out.len() >= 64 {
                    break;
                }
            }
        }
        if next.is_none() && w[3].is_none() && w[2].is_none() {
            break;
        }
    }
    out
}

/// The rewriter's counts for one text.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) rewritten: u64,
    /// Edits of the text the write stage made (a T filled in, a prefix column's DEFAULT): the
    /// rules', which a text read two ways cannot leave out as it leaves out a rewrite.
    pub(super) rule_edits: u64,
    declined: u64,
    unreadable: u64,
}

impl Tally {
    /// The text was not rewritten after all (another statement's decision, or two readings):
    /// its rewrites count as declined and leave the activity.
    pub(super) fn not_rewritten(self, activity: &mut Activity) -> Tally {
        activity.tables.retain(|(_, t)| *t != TableUse::Rewrite);
        Tally {
            declined: self.declined + self.rewritten,
            rewritten: 0,
            ..self
        }
    }

    pub(super) fn add_to(&self, c: &Counters) {
        use std::sync::atomic::Ordering::Relaxed;
        c.rewritten.fetch_add(self.rewritten, Relaxed);
        c.declined.fetch_add(self.declined, Relaxed);
        c.unreadable.fetch_add(self.unreadable, Relaxed);
    }
}
