//! What a session tells the metrics and the log about each command: its kind, the statement's
//! class and outcome, how long the client waited, the bytes each way, the HBase tables it
//! touched, and every refusal (counted by rule, logged with the rule, the table, the client's
//! address and user — never a value). Counting is per thread (`admin::metrics`).

use std::sync::Arc;

use tracing::{info, warn};

use super::Session;
use crate::admin::metrics::{self, Class as Kind, Outcome, TableEvent};
use crate::engine::decision::TableUse;
use crate::engine::refusal::{Refusal, REFUSAL_LABELS};
use crate::engine::router::{Answer, Decision};
use crate::hbase::schema::TableSchema;
use crate::sql::classify::Class;

/// Rows an open transaction's observations may show the advisor (`Observed::weight`; its rows
/// counted by partition past them are in `Observed::Counts`, one a statement).
const TXN_OBSERVED: usize = 4096;

/// An event on an HBase table, counted in the slot kept for it when it is the table counted
/// last (most statements of a session name the same table: no hashing of its names).
fn count_table(
    kept: &mut Option<(Arc<TableSchema>, usize)>,
    t: &Arc<TableSchema>,
    event: TableEvent,
) {
    let slot = match kept {
        Some((k, slot)) if Arc::ptr_eq(k, t) => *slot,
        _ => {
            let slot = metrics::table_slot(&t.schema, &t.name);
            *kept = Some((Arc::clone(t), slot));
            slot
        }
    };
    metrics::table_at(slot, event);
}

/// The metrics' event for what a statement did to a table.
fn event_of(how: TableUse) -> TableEvent {
    match how {
        TableUse::Read => TableEvent::Read,
        TableUse::Write => TableEvent::Write,
        TableUse::Rewrite => TableEvent::Rewrite,
    }
}

/// A table's label: `database.table`.
fn label(t: &TableSchema) -> String {
    format!("{}.{}", t.schema, t.name)
}

impl Session {
    /// The class and outcome of the text or prepare just decided, and what it did to tables.
    pub(super) fn note_statement(&mut self, class: Class, d: &Decision) {
        let refusal = match d {
            Decision::Answer(Answer::Refuse(r)) => Some(r),
            Decision::Send(w) => w.refused.as_deref(),
            _ => None,
        };
        let kind = match d {
            Decision::Ddl(_) => Kind::HbaseDdl,
            _ if self.activity.writes() => Kind::HbaseWrite,
            _ if !self.activity.tables.is_empty() => Kind::HbaseRead,
            // a refusal of what names no table the proxy could read: by the rule's family
            _ if class != Class::Plain && refusal.is_some() => refusal_kind(refusal),
            _ => Kind::Plain,
        };
        let outcome = match d {
            _ if refusal.is_some() => Outcome::Refused,
            Decision::Answer(_) | Decision::Ddl(_) => Outcome::Answered,
            Decision::Send(w) if w.text.is_some() => Outcome::Rewritten,
            _ => Outcome::Forwarded,
        };
        self.statement = Some((kind, outcome));
        for (t, how) in &self.activity.tables {
            count_table(&mut self.table_slot, t, event_of(*how));
        }
        if let Some(r) = refusal {
            self.count_refusal(r);
        }
    }

    /// An execution of a prepared statement: its class (a checked write, a prefix scan, or
    /// plain) and outcome.
    pub(super) fn note_execution(
        &mut self,
        table: Option<(&Arc<TableSchema>, TableUse)>,
        outcome: Outcome,
    ) {
        let kind = match table {
            Some((_, TableUse::Write)) => Kind::HbaseWrite,
            Some(_) => Kind::HbaseRead,
            None => Kind::Plain,
        };
        // (a refusal was counted, with its table, where it was decided)
        if let (Some((t, how)), false) = (table, outcome == Outcome::Refused) {
            count_table(&mut self.table_slot, t, event_of(how));
        }
        self.statement = Some((kind, outcome));
    }

    /// A refusal: counted under its rule (or kind), the table it was about, and logged.
    pub(super) fn count_refusal(&mut self, r: &Refusal) {
        let rule = REFUSAL_LABELS.get(r.label()).copied().unwrap_or("error");
        metrics::refusal(r.label());
        // the statement being carried out ends refused (HBase DDL, dynamic SQL, a LOAD's rows)
        if let Some((kind, _)) = self.statement {
            self.statement = Some((kind, Outcome::Refused));
        }
        let last = self.activity.tables.last().map(|(t, _)| t.clone());
        if let Some(t) = &last {
            count_table(&mut self.table_slot, t, TableEvent::Refusal);
        }
        let table = last.as_deref().map(label);
        info!(
            target: "obkv_proxy::refusal",
            rule,
            table = table.as_deref().unwrap_or(""),
            client = %self.peer,
            user = %self.user,
            "statement refused"
        );
    }

    /// A command's end, counted once and before the answer's last bytes are written (so a
    /// scrape that follows an answer sees it): its kind, the statement's latency as the client
    /// saw it (from its last byte read to the answer's end being handed to the socket), the
    /// bytes each way so far; a statement slower than `log.slow_statement_ms` is logged. The
    /// answers call it just before their final write; the command loop calls it after each
    /// command for the rest (a no-op when counted already or counting is off).
    pub(super) fn observe_end(&mut self) {
        let Some(started) = self.started.take() else {
            return;
        };
        let command = self.command.first().copied().unwrap_or_default();
        let (from_client, to_client) = self.traffic_since_counted();
        let Some((kind, outcome)) = self.statement.take() else {
            metrics::command(command, None, from_client, to_client);
            return;
        };
        let took = metrics::since_ns(started);
        metrics::command(command, Some((kind, outcome, took)), from_client, to_client);
        let slow = self.cfg.log.slow_statement_ms;
        if slow > 0 && took >= slow.saturating_mul(1_000_000) {
            self.log_slow(kind, outcome, took);
        }
    }

    #[cold]
    #[inline(never)]
    fn log_slow(&self, kind: Kind, outcome: Outcome, took: u64) {
        let table = self.activity.tables.last().map(|(t, _)| label(t));
        warn!(
            target: "obkv_proxy::slow",
            class = metrics::CLASSES[kind as usize],
            outcome = metrics::OUTCOMES[outcome as usize],
            ms = took / 1_000_000,
            table = table.as_deref().unwrap_or(""),
            client = %self.peer,
            user = %self.user,
            statement = %crate::sql::digest::digest(self.command.get(1..).unwrap_or_default(), self.reading()),
            "slow statement"
        );
    }

    /// The client's bytes each way since they were last counted (what is queued to be written
    /// included), and now counted.
    fn traffic_since_counted(&mut self) -> (u64, u64) {
        let now = self.client.traffic_queued();
        let since = (
            now.0.saturating_sub(self.traffic.0),
            now.1.saturating_sub(self.traffic.1),
        );
        self.traffic = now;
        since
    }

    /// The session's end: the bytes written since its last command was counted (an answer
    /// written past the queue, a compressed end) are counted too.
    /// What the command just answered showed the rowkey advisor, once the backend ran it: an
    /// error drops it (a statement the backend refused wrote nothing; one that ends the
    /// transaction, a deadlock, takes the transaction's rows with it); inside a transaction it
    /// waits for the transaction's end — given to the advisor at a commit (or any end but a
    /// ROLLBACK), dropped at a rollback; outside one it goes to the advisor now.
    pub(super) fn settle_observations(&mut self, summary: &crate::protocol::response::Summary) {
        use crate::protocol::constants::status;
        let in_txn = self.last_status & status::IN_TRANS != 0;
        if summary.error_code.is_some() {
            self.activity.observed.clear();
            if !in_txn {
                self.txn_observed.clear();
            }
            return;
        }
        if in_txn {
            // the first rows up to TXN_OBSERVED (each observation weighs the rows it shows)
            crate::engine::decision::move_within(
                &mut self.activity.observed,
                (&mut self.txn_observed, &mut self.txn_shown),
                TXN_OBSERVED,
            );
            return;
        }
        if !self.txn_observed.is_empty() {
            if self.rolled_back() {
                self.txn_observed.clear();
            } else {
                crate::admin::advisor::record(&mut self.txn_observed, self.started);
                self.txn_observed
                    .shrink_to(crate::engine::decision::MAX_OBSERVED);
            }
        }
        crate::admin::advisor::record(&mut self.activity.observed, self.started);
    }

    /// Whether the text that just ended a transaction rolled it back: a ROLLBACK (not to a
    /// savepoint) among its statements, read lexically (only when a transaction's observations
    /// wait on the answer).
    fn rolled_back(&self) -> bool {
        use crate::protocol::constants::com;
        match self.command.first().copied() {
            Some(com::QUERY) => {}
            // both end the session's transaction by rolling it back
            Some(com::RESET_CONNECTION | com::CHANGE_USER) => return true,
            _ => return false,
        }
        let sql = self.command.get(1..).unwrap_or_default();
        let d = self.reading();
        let mut words = crate::sql::scan::Scanner::new(sql, d)
            .map_while(Result::ok)
            .filter(|t| t.kind == crate::sql::scan::Tok::Word)
            .peekable();
        while let Some(t) = words.next() {
            if t.is_word(sql, "ROLLBACK") && !words.peek().is_some_and(|n| n.is_word(sql, "TO")) {
                return true;
            }
        }
        false
    }

    /// The session ends: a transaction still open is rolled back by the backend, and its
    /// observations with it.
    pub(super) fn observe_close(&mut self) {
        self.txn_observed.clear();
        if metrics::enabled() {
            let (from_client, to_client) = self.traffic_since_counted();
            metrics::traffic(from_client, to_client);
        }
    }
}

/// The class a refusal of no known table belongs to: DDL rules and DDL refusals are DDL, the
/// rest are writes (what the rules check).
fn refusal_kind(r: Option<&Refusal>) -> Kind {
    match r {
        Some(Refusal::Rule(f)) if f.rule.id().starts_with('R') => Kind::HbaseDdl,
        Some(
            Refusal::DdlNotAlone(_)
            | Refusal::DdlPrepared
            | Refusal::GroupExists(_)
            | Refusal::UnknownGroup(_)
            | Refusal::GroupHasTables { .. },
        ) => Kind::HbaseDdl,
        _ => Kind::HbaseWrite,
    }
}
