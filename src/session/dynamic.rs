//! SQL-level dynamic SQL under the write rules: `PREPARE name FROM …` has its text checked like
//! a COM_STMT_PREPARE and keeps a plan for the name; `EXECUTE name USING …` and
//! `EXECUTE IMMEDIATE … USING …` are checked with the values they bind, read from the session's
//! own connection first (`SELECT CAST(v AS BINARY), …`: user variables and literals only, no
//! side effects), and placed by the transaction guard.

use crate::admin::bump;
use crate::engine::refusal::{Refusal, Unchecked, Unreadable};
use crate::engine::router::{self, DynamicCheck, DynamicSource, DynamicSql};
use crate::engine::write::{Bound, Place, WritePlan};
use crate::protocol::constants::er;
use crate::protocol::constants::status;
use crate::protocol::packets::ErrorInfo;
use crate::protocol::response::{ResponseKind, Summary};
use crate::sql::dynamic;

use super::prepared::{SqlPlan, MAX_SQL_PLANS};
use super::{End, Session};

/// The text a dynamic statement runs, as the session read it.
pub(super) enum SourceText {
    Text(Vec<u8>),
    /// Its expression failed on the backend: the backend's error.
    Unread(ErrorInfo),
}

/// The error of a backend's ERR packet (`0xff`, code, `#` and SQLSTATE, message).
fn error_of(packet: &[u8]) -> ErrorInfo {
    let code = crate::protocol::packets::parse_err_code(packet).unwrap_or(er::UNKNOWN_ERROR);
    let rest = packet.get(3..).unwrap_or_default();
    let (state, message) = match rest.strip_prefix(b"#") {
        Some(r) if r.len() >= 5 => (String::from_utf8_lossy(&r[..5]).into_owned(), &r[5..]),
        _ => ("HY000".to_string(), rest),
    };
    ErrorInfo::new(code, &state, String::from_utf8_lossy(message))
}

/// What `on_sql_executions` did with a text.
pub(super) enum SqlExecutions {
    /// The command is done (checked and forwarded, or refused).
    Answered,
    /// Forward it as usual; forget these names' plans if the whole text runs without error.
    Forget(Vec<Vec<u8>>),
}

/// An execution's verdict: it runs (fixing this partition inside a transaction), or not.
enum Verdict {
    Runs(Option<Place>),
    Refused(ErrorInfo),
}

impl Session {
    /// The text a PREPARE / EXECUTE IMMEDIATE takes from an expression (`@name`, or a
    /// computation `dynamic::Source::Computed` allows, as written), read with a SELECT of its
    /// own just before the statement: no side effects, and the value the statement gets. Empty
    /// when it is NULL (the backend's own error for the statement follows).
    pub(super) async fn variable_text(&mut self, expr: &[u8]) -> Result<SourceText, End> {
        let sql = [b"SELECT ".as_slice(), expr].concat();
        Ok(match self.internal(&sql).await? {
            crate::backend::QueryResult::Rows(rows) => SourceText::Text(
                rows.into_iter()
                    .next()
                    .and_then(|r| r.into_iter().next().flatten())
                    .unwrap_or_default(),
            ),
            // the same expression fails the same way in the statement; and a failure of the
            // SELECT alone (a time limit the statement does not have) must not let an unread
            // text through
            crate::backend::QueryResult::Err(packet) => SourceText::Unread(error_of(&packet)),
            crate::backend::QueryResult::Ok(_) => SourceText::Unread(ErrorInfo::internal(
                "while reading the text of a PREPARE / EXECUTE IMMEDIATE",
            )),
        })
    }

    /// `router::check_dynamic` on a text, reading the facts it needs first (a large text is
    /// read off the event loop). A text that could not be read is refused with the backend's
    /// error in strict mode.
    pub(super) async fn check_dynamic_text(
        &mut self,
        text: SourceText,
    ) -> Result<DynamicCheck, End> {
        let text = match text {
            SourceText::Text(t) => t,
            SourceText::Unread(e) if self.strict() => {
                return Ok(DynamicCheck::Refused(Refusal::Error(e)))
            }
            SourceText::Unread(_) => return Ok(DynamicCheck::Runs),
        };
        let text = std::sync::Arc::new(text);
        self.blind.clear();
        let mut ctx = self.context().await?;
        for round in 0..3 {
            let check = if text.len() <= router::LARGE_TEXT {
                router::check_dynamic(&text, &ctx)
            } else {
                let (t, c) = (text.clone(), ctx.clone());
                tokio::task::spawn_blocking(move || router::check_dynamic(&t, &c))
                    .await
                    .unwrap_or_else(|_| {
                        let e = ErrorInfo::internal("while reading the statement");
                        DynamicCheck::Refused(Refusal::Error(e))
                    })
            };
            let DynamicCheck::NeedFacts(need) = check else {
                return Ok(check);
            };
            self.read_facts(&need).await?;
            ctx = self.context().await?;
            // the last decision is made with what is known: a fact still missing then (a
            // table not readable, no character set) is taken as it stands
            if let (Some(t), true) = (ctx.tables.as_mut(), round >= 1) {
                t.settled = true;
            }
        }
        // what it needs cannot be had: not run unchecked
        if self.strict() {
            let blind = !self.blind.is_empty();
            return Ok(DynamicCheck::Refused(Refusal::FactsMissing { blind }));
        }
        Ok(DynamicCheck::Runs)
    }

    /// A PREPARE or EXECUTE IMMEDIATE as a statement of its own (`Decision::Dynamic`).
    pub(super) async fn on_dynamic(
        &mut self,
        d: DynamicSql,
        kind: ResponseKind,
    ) -> Result<Option<Summary>, End> {
        let text = match d.source {
            DynamicSource::Literal(t) => SourceText::Text(t),
            DynamicSource::Computed(expr) => self.variable_text(&expr).await?,
        };
        // a refused PREPARE leaves the backend's statement of that name, and its plan, as
        // they were
        let (plan, params) = match self.check_dynamic_text(text).await? {
            DynamicCheck::Refused(e) => {
                self.count_refusal(&e);
                return self.refuse(e.to_error()).await;
            }
            DynamicCheck::Runs | DynamicCheck::NeedFacts(_) => {
                let summary = self.forward(kind).await?;
                if let (true, Some(name), None) = (d.head.prepare, &d.head.name, summary.error_code)
                {
                    // the name holds a statement with nothing to check now
                    self.statements.by_name.remove(name);
                }
                return Ok(Some(summary));
            }
            DynamicCheck::Checked { plan, params } => (plan, params),
        };
        match (d.head.prepare, d.head.name) {
            (true, Some(name)) => {
                let room = self.statements.by_name.len() < MAX_SQL_PLANS
                    || self.statements.by_name.contains_key(&name);
                if !room && self.strict() {
                    return self
                        .refuse(ErrorInfo::new(
                            er::MAX_PREPARED_STMT_COUNT_REACHED,
                            "42000",
                            format!(
                                "obkv-proxy keeps the checks of at most {MAX_SQL_PLANS} SQL-level \
                                 prepared writes per session; DEALLOCATE PREPARE some first"
                            ),
                        ))
                        .await;
                }
                let summary = self.forward(kind).await?;
                // a PREPARE the backend refused keeps the old plan: whatever the backend still
                // holds under the name is checked as before
                if summary.error_code.is_none() {
                    if !room {
                        // only without strict enforcement; its executions go unchecked
                        self.statements.by_name.remove(&name);
                    } else {
                        self.statements
                            .by_name
                            .insert(name, SqlPlan { plan, params });
                    }
                }
                Ok(Some(summary))
            }
            (true, None) => {
                if self.strict() {
                    return self
                        .refuse(Refusal::Unreadable(Unreadable::PrepareName).to_error())
                        .await;
                }
                self.forward(kind).await.map(Some)
            }
            // EXECUTE IMMEDIATE: this one execution
            (false, _) => {
                match self
                    .check_sql_execution(&plan, params, d.head.using.as_deref())
                    .await?
                {
                    Verdict::Refused(e) => self.refuse(e).await,
                    Verdict::Runs(pin) => self.forward_pinned(kind, pin).await.map(Some),
                }
            }
        }
    }

    /// Before a text that may name a SQL-level prepared statement the proxy keeps a plan for:
    /// an `EXECUTE name` of a planned write is checked with its values (Answered when the
    /// proxy answered the command itself); otherwise the names the text deallocates (or, in a
    /// multi-statement text, prepares anew) are returned, to be forgotten once the whole text
    /// ran without error. Every way the backend may read the text is looked at.
    pub(super) async fn on_sql_executions(&mut self) -> Result<SqlExecutions, End> {
        if self.statements.by_name.is_empty() {
            return Ok(SqlExecutions::Forget(Vec::new()));
        }
        let primary = self.reading();
        let names = if self.command.len() <= router::LARGE_TEXT {
            let planned = |n: &[u8]| self.statements.by_name.contains_key(n);
            dynamic::read_names(self.command.get(1..).unwrap_or_default(), primary, planned)
        } else {
            // a large text is read off the event loop, like every other reading of one
            let keys: std::collections::HashSet<Vec<u8>> =
                self.statements.by_name.keys().cloned().collect();
            let read = self
                .off_loop(move |sql| dynamic::read_names(sql, primary, |n| keys.contains(n)))
                .await;
            match read {
                Some(names) => names,
                None => {
                    self.refuse(ErrorInfo::internal("while reading the statement"))
                        .await?;
                    return Ok(SqlExecutions::Answered);
                }
            }
        };
        let dynamic::Names {
            forget,
            planned,
            many,
            unsure,
        } = names;
        let Some(dynamic::Head {
            name: Some(name),
            using,
            ..
        }) = planned
        else {
            return Ok(SqlExecutions::Forget(forget));
        };
        if many || unsure {
            if !self.strict() {
                return Ok(SqlExecutions::Forget(forget));
            }
            let e = if many {
                Refusal::Unchecked(Unchecked::DynamicWriteInText)
            } else {
                Refusal::Unreadable(Unreadable::ExecuteValues)
            };
            self.count_refusal(&e);
            self.refuse(e.to_error()).await?;
            return Ok(SqlExecutions::Answered);
        }
        let Some(p) = self.statements.by_name.get(&name) else {
            return Ok(SqlExecutions::Forget(forget));
        };
        let (plan, params) = (p.plan.clone(), p.params);
        match self
            .check_sql_execution(&plan, params, using.as_deref())
            .await?
        {
            Verdict::Refused(e) => self.refuse(e).await.map(drop)?,
            Verdict::Runs(pin) => self
                .forward_pinned(ResponseKind::Query, pin)
                .await
                .map(drop)?,
        }
        Ok(SqlExecutions::Answered)
    }

    async fn refuse(&mut self, e: ErrorInfo) -> Result<Option<Summary>, End> {
        bump(&self.shared.stats.answered_locally);
        self.answer_error(e).await.map(|()| None)
    }

    /// Forwards the command; a write that ran inside a transaction fixes its partition.
    async fn forward_pinned(
        &mut self,
        kind: ResponseKind,
        pin: Option<Place>,
    ) -> Result<Summary, End> {
        let summary = self.forward(kind).await?;
        if let (Some(p), true, None) = (
            pin,
            self.last_status & status::IN_TRANS != 0 && summary.error_code.is_none(),
            &self.txn_pin,
        ) {
            self.txn_pin = Some(p);
        }
        Ok(summary)
    }

    /// One SQL-level execution of a checked write: its values read, the cell rules and the
    /// transaction guard applied.
    async fn check_sql_execution(
        &mut self,
        plan: &WritePlan,
        params: usize,
        using: Option<&[Vec<u8>]>,
    ) -> Result<Verdict, End> {
        let Some(rules) = self.write_rules() else {
            return Ok(Verdict::Runs(None));
        };
        let values: Vec<Option<Vec<u8>>> = match using {
            // no values to bind, or a count the backend refuses by itself
            Some(items) if params == 0 || items.len() != params => Vec::new(),
            Some(items) => {
                let mut sql = b"SELECT ".to_vec();
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        sql.extend_from_slice(b", ");
                    }
                    sql.extend_from_slice(b"CAST(");
                    sql.extend_from_slice(item);
                    sql.extend_from_slice(b" AS BINARY)");
                }
                match self.internal(&sql).await? {
                    crate::backend::QueryResult::Rows(rows) => {
                        rows.into_iter().next().unwrap_or_default()
                    }
                    _ if self.strict() => return Ok(Verdict::Refused(unread_values())),
                    _ => return Ok(Verdict::Runs(None)),
                }
            }
            None if params == 0 => Vec::new(),
            None if self.strict() => return Ok(Verdict::Refused(unread_values())),
            None => return Ok(Verdict::Runs(None)),
        };
        let bound = |i: u32| -> Bound<'_> {
            match values.get(i as usize) {
                Some(Some(v)) => Bound::Text(v),
                Some(None) => Bound::Null,
                None => Bound::Other,
            }
        };
        let txn = self.txn();
        let ctx = self.exec_context(&rules, &txn);
        let out = crate::engine::decide_execution(plan, Some(&bound), &ctx);
        if let Some(e) = out.refuse {
            self.count_refusal(&e);
            return Ok(Verdict::Refused(e.to_error()));
        }
        self.keep_findings(out.notes);
        Ok(Verdict::Runs(out.pin))
    }
}

/// The values of an EXECUTE the proxy could not read.
fn unread_values() -> ErrorInfo {
    Refusal::Unchecked(Unchecked::ExecuteValues).to_error()
}
