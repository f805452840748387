//! The decision point. Every statement — text, and prepared at prepare time — comes here
//! (`decide`), and the `Decision` (in `decision.rs`) is an action for the session:
//!
//! * `Send`: send the client's bytes (`Decision::forward()`, the fast path for plain traffic,
//!   decided by the lexical pre-check alone) or a rewritten text (T filled in, prefix predicates
//!   spliced), with what goes with it: notes, the transaction's partition after it, a prepare's
//!   plans, a LOAD's file check, catalog entries to read first, a refusal that cuts the text;
//! * `Answer`: do not involve the backend; answer with a local result or error (proxy commands,
//!   statements the proxy refuses);
//! * `Ddl`: HBase DDL, carried out by the session against the rules and the catalog;
//! * `Need`: facts to read first (a table's schema, the current database, the character set, the
//!   texts user variables hold for dynamic SQL), then decide again;
//! * `Dynamic`: a PREPARE / EXECUTE IMMEDIATE of its own, whose text the session gets and checks.
//!
//! Execution-time decisions (binary executes, `EXECUTE … USING`, LOAD rows) are `execute.rs`'s.
//!
//! The story for a flagged text: split it into its statements as the backend reads them
//! (`scan`: executable comments, escapes, quotes); read each one (HBase DDL is recognised by its
//! identifier tokens, never by a `$` inside a string); then decide for the whole text. A text
//! the proxy can read in more than one way (`scan::Ambiguity`) is read every way, and where the
//! readings disagree the statement is refused rather than guessed at.

use super::prefix_scan::{self, Need};
use super::read::*;
use super::text::{self, Tally};
use super::write;
use crate::sql::classify::{classify, leading_words, Class};
use crate::sql::dml;
use crate::sql::dynamic::Source;
use crate::sql::scan::{self, statements, Dialect, Scanner};

pub use super::decision::*;

/// Texts above this size are analysed off the session's event loop (see `session`).
pub const LARGE_TEXT: usize = 256 * 1024;

pub fn decide(sql: &[u8], origin: Origin, ctx: &Context) -> (Class, Decision) {
    let class = classify(sql);
    (class, decide_classified(sql, class, origin, ctx))
}

/// `decide` for a text whose pre-check class is already known.
pub fn decide_classified(sql: &[u8], class: Class, origin: Origin, ctx: &Context) -> Decision {
    decide_observed(sql, class, origin, ctx, &mut Activity::default())
}

/// `decide_classified`, and what the text does to HBase tables (for the metrics and the rowkey
/// advisor) added to `activity` (the caller empties it: its buffers are kept from text to text).
pub fn decide_observed(
    sql: &[u8],
    class: Class,
    origin: Origin,
    ctx: &Context,
    activity: &mut Activity,
) -> Decision {
    match class {
        Class::Plain => Decision::forward(),
        Class::MaybeHbase => decide_flagged(sql, origin, ctx, activity),
        Class::ProxyCommand => decide_proxy_command(sql, origin, ctx.dialect),
        Class::ServerProbe => decide_probe(sql, origin, ctx.socket.as_deref()),
    }
}

/// A driver's probe of the server's variables (`sql::probe`): `@@socket` is answered empty.
/// Needs no context; a prepared probe is forwarded (drivers send theirs as text).
pub fn decide_probe(sql: &[u8], origin: Origin, socket: Option<&str>) -> Decision {
    match (origin, crate::sql::probe::hide_socket(sql, socket)) {
        (Origin::Text, Some(text)) => Decision::rewrite(text),
        _ => Decision::forward(),
    }
}

/// The text a SQL-level PREPARE or EXECUTE IMMEDIATE will run (read from a user variable by
/// the session): None when it may run, else the refusal.
pub fn decide_dynamic(text: &[u8], ctx: &Context) -> Option<Refusal> {
    // no `$` and no TABLEGROUP in any reading (not even one the proxy cannot lex: the
    // backend's own syntax error follows)
    if classify(text) == Class::Plain {
        return None;
    }
    let reading = |d: Dialect| -> Result<Vec<Read>, Refusal> {
        let (pieces, _) =
            statements(text, d).map_err(|_| Refusal::Unreadable(Unreadable::DynamicText))?;
        Ok(pieces
            .iter()
            .map(|p| read_executed(text, *p, d, &ctx.scope, false, None).0)
            .collect())
    };
    match reading(ctx.dialect) {
        Err(e) => Some(e),
        Ok(reads) => reads.iter().find_map(|r| dynamic_refusal(r, ctx)),
    }
}

/// The text a SQL-level PREPARE or EXECUTE IMMEDIATE runs, as the write rules see it: HBase
/// DDL is refused (`decide_dynamic`); a write on an HBase table has its literals checked now,
/// like a COM_STMT_PREPARE of the same text, and gets the plan its executions are checked
/// with. No recursion: a dynamic statement inside the text is refused (strict) or left to the
/// backend, which does not prepare one.
pub fn check_dynamic(text: &[u8], ctx: &Context) -> DynamicCheck {
    if let Some(e) = decide_dynamic(text, ctx) {
        return DynamicCheck::Refused(e);
    }
    let Some(rules) = &ctx.writes else {
        return DynamicCheck::Runs;
    };
    let class = classify(text);
    if class != Class::MaybeHbase {
        return DynamicCheck::Runs;
    }
    let w = match decide_flagged(text, Origin::Prepare, ctx, &mut Activity::default()) {
        Decision::Need(n) if n.variables.is_empty() => return DynamicCheck::NeedFacts(n),
        Decision::Answer(Answer::Refuse(e)) => return DynamicCheck::Refused(e),
        Decision::Send(w) => w,
        _ => return DynamicCheck::Runs,
    };
    if let Some(e) = w.refused {
        return DynamicCheck::Refused(*e);
    }
    let Some(plan) = w.plan else {
        return DynamicCheck::Runs;
    };
    // the proxy fills in a T left out by changing the text it sends; this text is the
    // backend's to run as it stands
    if w.text.is_some()
        && write::leaves_t_out(&plan)
        && rules.cells == crate::config::Enforcement::Strict
    {
        return DynamicCheck::Refused(Refusal::TLeftOutInDynamic);
    }
    DynamicCheck::Checked {
        plan: std::sync::Arc::from(plan),
        params: crate::sql::dynamic::placeholders(text, ctx.dialect),
    }
}

fn decide_flagged(sql: &[u8], origin: Origin, ctx: &Context, activity: &mut Activity) -> Decision {
    let (primary, mut ambiguity, tally) =
        decide_reading_into(sql, origin, ctx, ctx.dialect, activity);
    if needs_facts(&primary) {
        return primary;
    }
    // a backslash after a byte >= 0x80 reads another way only where the client's character
    // set has such characters (gbk, big5, sjis, cp932): not when the session's is known to be
    // UTF-8, latin1 or binary (a backup of binary rowkeys restored under SET NAMES utf8mb4)
    let mut single_byte = false;
    if ambiguity.multibyte && !ctx.dialect.multibyte_backslash {
        if let Some(view) = &ctx.tables {
            match view.charset {
                Some(
                    prefix_scan::ConnCharset::Utf8
                    | prefix_scan::ConnCharset::Latin1
                    | prefix_scan::ConnCharset::Binary,
                ) => {
                    ambiguity.multibyte = false;
                    single_byte = true;
                }
                None if !view.settled => {
                    return Decision::Need(Need {
                        charset: true,
                        ..Need::default()
                    })
                }
                _ => {}
            }
        }
    }
    // the rewriter's decisions are forwards as far as the rules are concerned
    let plain = |d: &Decision| match d {
        Decision::Send(w) if w.refused.is_none() => Decision::Send(Outbound {
            read_catalog: w.read_catalog.clone(),
            ..Outbound::default()
        }),
        other => other.clone(),
    };
    // Where the readings disagree and enforcement is not strict, the text goes as written; the
    // write stage's findings of the backend's own reading stay with it: its notes, and the
    // partition it writes for the transaction's guard.
    let lax = |d: &Decision| match d {
        Decision::Send(w) if w.refused.is_none() && w.checked => Decision::Send(Outbound {
            checked: true,
            notes: w.notes.clone(),
            txn_after: w.txn_after.clone(),
            read_catalog: w.read_catalog.clone(),
            ..Outbound::default()
        }),
        other => plain(other),
    };
    let mut rewrite_agreed = true;
    // other readings exist only for an ambiguous text or a server not told apart yet; what
    // another reading finds ambiguous widens the set (a `"…"` that is a name under ANSI_QUOTES
    // may hold a backquote after a multibyte lead byte that the first reading never saw)
    let known_single_byte = |mut a: scan::Ambiguity| {
        if single_byte {
            a.multibyte = false;
        }
        a
    };
    let mut seen = ambiguity;
    let mut queue: Vec<Dialect> = if ambiguity != scan::Ambiguity::default()
        || ctx.dialect.flavor == scan::Flavor::MySqlOrOceanBase
    {
        ctx.dialect
            .readings(ambiguity)
            .into_iter()
            .skip(1)
            .collect()
    } else {
        Vec::new()
    };
    // (inline: a text read one way, most of them, allocates nothing here)
    let mut tried: smallvec::SmallVec<[Dialect; 4]> = smallvec::smallvec![ctx.dialect];
    let notes = |d: &Decision| match d {
        Decision::Send(w) => w.notes.clone(),
        _ => Vec::new(),
    };
    let mut other_needs: Option<Need> = None;
    while let Some(other) = queue.pop() {
        if tried.contains(&other) {
            continue;
        }
        tried.push(other);
        // a reading in which the backend refuses the first statement by itself runs nothing of
        // the text, so it cannot disagree (`PREPARE s FROM "…"`: a name under ANSI_QUOTES)
        if fails_first(sql, other, &ctx.scope) {
            continue;
        }
        let (decision, found, _) = decide_reading(sql, origin, ctx, other);
        let widened = seen.union(known_single_byte(found));
        if widened != seen {
            seen = widened;
            for d in ctx.dialect.readings(seen) {
                if !tried.contains(&d) && !queue.contains(&d) {
                    queue.push(d);
                }
            }
        }
        // an executable comment OceanBase may run or not: the readings must agree on what the
        // rules found too (`/*!999999 - */ -5` is a checked T in one reading, an expression in
        // the other)
        let exact = seen.comment && ctx.dialect.may_be_oceanbase();
        if let (true, Decision::Need(n)) = (needs_facts(&decision), &decision) {
            let n = n.clone();
            // another reading needs facts too: read them, then compare the readings' decisions
            other_needs.get_or_insert_with(Need::default).merge(n);
            continue;
        }
        // the transaction's partition after the text, as each reading has it
        let pins = |d: &Decision| match d {
            Decision::Send(w) => w.txn_after.clone(),
            _ => None,
        };
        // a text cut short by a refusal: the bytes sent are read by the backend too
        let cut = |d: &Decision| match d {
            Decision::Send(w) if w.refused.is_some() => w.text.clone(),
            _ => None,
        };
        if action(&plain(&decision)) != action(&plain(&primary))
            || pins(&decision) != pins(&primary)
            || cut(&decision) != cut(&primary)
            || (exact && notes(&decision) != notes(&primary))
        {
            // e.g. a string that ends in one reading and not in the other hides a statement;
            // where the backend's own reading refuses the whole text, its refusal says more
            if matches!(primary, Decision::Answer(Answer::Refuse(_))) {
                return primary;
            }
            return if ctx.strict {
                refuse(Refusal::Unreadable(Unreadable::Ambiguous))
            } else {
                lax(&primary)
            };
        }
        rewrite_agreed &= same_effect(&decision, &primary);
    }
    if let Some(n) = other_needs {
        return Decision::Need(n);
    }
    if matches!(primary, Decision::Dynamic(_)) && !rewrite_agreed && ctx.strict {
        // its text or its values would be taken from one reading of several
        return refuse(Refusal::Unreadable(Unreadable::AmbiguousDynamic));
    }
    if let Some(view) = &ctx.tables {
        if !rewrite_agreed && plain(&primary) != primary {
            // a text the proxy can read two ways is never rewritten
            let rule_edits = tally.rule_edits;
            tally.not_rewritten(activity).add_to(&view.counters);
            // What the write stage made is the rules', not an optimisation to leave out: a T
            // filled in, each execution's write plan, a LOAD file's check. Where the readings
            // put it apart (the state_reading fuzz target: `INSERT g$f SET K='a',Q=/*!` and a
            // byte 0xFF fills T in at the end in one reading, before the statement in
            // OceanBase's plain-comment one), strict enforcement refuses. Otherwise, and where
            // it made nothing but notes (the readings differ only in whether they see the
            // write at all), the text goes as written with the notes and the partition it
            // writes for the guard (`lax`).
            let rules_made = matches!(&primary, Decision::Send(w) if w.checked
                && (rule_edits > 0 || w.plan.is_some() || w.load.is_some()));
            if ctx.strict && rules_made {
                return refuse(Refusal::Unreadable(Unreadable::Ambiguous));
            }
            return lax(&primary);
        }
        if ambiguity.state && tally.rewritten > 0 && ctx.rewrite {
            // a prefix after a change of the connection's character set in the same text: its
            // bytes are the new character set's, which no reading models; decided again
            // without prefix rewrites (the write stage's own edits, a T filled in, stay)
            tally.not_rewritten(activity).add_to(&view.counters);
            let unrewritten = Context {
                rewrite: false,
                ..ctx.clone()
            };
            return decide_reading(sql, origin, &unrewritten, ctx.dialect).0;
        }
        tally.add_to(&view.counters);
    }
    primary
}

/// The decision under one reading alone, as if the proxy knew that the backend reads the text
/// so (a flagged text); None where the backend refuses the text's first statement by itself in
/// that reading, so that nothing of it runs. The `state_reading` fuzz target holds `decide` to
/// it: for every reading the proxy cannot rule out, `decide` refuses or does what this does.
pub fn decide_as_read(sql: &[u8], origin: Origin, ctx: &Context, d: Dialect) -> Option<Decision> {
    if fails_first(sql, d, &ctx.scope) {
        return None;
    }
    Some(decide_reading(sql, origin, ctx, d).0)
}

/// Whether, in reading `d`, nothing of the text runs: it is empty (all of it a comment), or
/// its first statement is dynamic SQL the backend refuses by itself (`dynamic::Source::Fails`, or a PREPARE / EXECUTE that does not lex before its
/// end: `PREPARE s FROM "a\"b"` under ANSI_QUOTES): then nothing of the text runs in that
/// reading.
fn fails_first(sql: &[u8], d: Dialect, scope: &Scope) -> bool {
    // OceanBase's reading of executable comments as comments: a text that is all comment
    // (mysqldump's `/*!40000 ALTER TABLE t DISABLE KEYS */`) is empty in it, and the backend
    // runs nothing of an empty text
    if d.plain_comments && statements(sql, d).is_ok_and(|(p, _)| p.is_empty()) {
        return true;
    }
    // one token decides for every other text (`SET STATEMENT … FOR PREPARE …` is read through)
    let mut toks = Scanner::new(sql, d);
    let Some(Ok(first)) = toks.next() else {
        return false;
    };
    let dynamic = first.is_word(sql, "PREPARE") || first.is_word(sql, "EXECUTE");
    if !dynamic && !first.is_word(sql, "SET") {
        return false;
    }
    let Ok((pieces, _)) = statements(sql, d) else {
        if !dynamic {
            return false;
        }
        for t in toks {
            match t {
                Ok(t) if t.is_punct(b';') => return false,
                Ok(_) => {}
                Err(_) => return true,
            }
        }
        return false;
    };
    pieces.first().is_some_and(|p| {
        read_executed(sql, *p, d, scope, false, None).0 == Read::Dynamic(Source::Fails)
    })
}

/// Whether a decision asks for facts the decision depends on (not the texts of dynamic SQL,
/// which are checked once the rest of the text has been decided).
fn needs_facts(d: &Decision) -> bool {
    matches!(d, Decision::Need(n) if n.variables.is_empty())
}

/// What a reading's decision does, for comparing readings: the text sent whole, after reading
/// catalog entries, or cut short by a refusal; answered; DDL; facts needed; dynamic SQL.
fn action(d: &Decision) -> u8 {
    match d {
        Decision::Send(s) if s.refused.is_some() => 2,
        Decision::Send(s) if !s.read_catalog.is_empty() => 1,
        Decision::Send(_) => 0,
        Decision::Answer(_) => 3,
        Decision::Ddl(_) => 4,
        Decision::Need(_) => 5,
        Decision::Dynamic(_) => 6,
    }
}

/// Whether two readings' decisions do the same to the text and the session: the same text
/// sent, refusal, transaction partition and plans (their notes may differ: a `"…"` that is a
/// string in one reading is a name, a value the proxy cannot see, in the other).
fn same_effect(a: &Decision, b: &Decision) -> bool {
    match (a, b) {
        // the write stage's: compared but for their notes
        (Decision::Send(x), Decision::Send(y)) if x.checked || y.checked => {
            x.checked == y.checked
                && x.text == y.text
                && x.refused == y.refused
                && x.txn_after == y.txn_after
                && x.plan.is_some() == y.plan.is_some()
                && x.scan == y.scan
                && x.load.is_some() == y.load.is_some()
                && x.read_catalog == y.read_catalog
        }
        _ => a == b,
    }
}

/// The decision under one reading, and what of the text that reading found ambiguous.
fn decide_reading(
    sql: &[u8],
    origin: Origin,
    ctx: &Context,
    d: Dialect,
) -> (Decision, scan::Ambiguity, Tally) {
    decide_reading_into(sql, origin, ctx, d, &mut Activity::default())
}

/// `decide_reading`, gathering what the text does to HBase tables into `activity`.
fn decide_reading_into(
    sql: &[u8],
    origin: Origin,
    ctx: &Context,
    d: Dialect,
    activity: &mut Activity,
) -> (Decision, scan::Ambiguity, Tally) {
    // a text that repeats a kept one but for its one literal's body: its statement's reading
    // is the kept one's with that value (`sql::repeat`), and nothing in it is ambiguous, as
    // nothing was in the kept text (read as `read_piece` reads: by the DML reader where the
    // rules read tables, a `Read::Dml` where the scope covers its table's database)
    let lent = match ctx
        .tables
        .as_ref()
        .and_then(|_| crate::sql::repeat::read(sql, d))
    {
        Some((_, lent)) if !in_scope(&lent.dml, &ctx.scope) => {
            crate::sql::repeat::put_back(d, lent);
            None
        }
        lent => lent,
    };
    let mut kept;
    let (pieces, ambiguity, given) = match lent {
        Some((piece, lent)) => {
            kept = scan::Kept::new(0);
            (
                smallvec::smallvec![piece],
                scan::Ambiguity::default(),
                Some(lent),
            )
        }
        None => {
            // the split keeps the tokens for the DML reader (a text with an executable
            // comment is lexed per statement, as the reader has always seen it)
            kept = scan::Kept::new(if dml::has_executable_comment(sql) {
                0
            } else {
                dml::MAX_TOKENS + 1
            });
            match split(sql, d, &mut kept) {
                Some((pieces, ambiguity)) => (pieces, ambiguity, None),
                None => return unsplit(sql),
            }
        }
    };
    let dynamic = text::Dynamic {
        decide: decide_dynamic,
        check: check_dynamic,
    };
    // (its one statement's reading may be kept for texts that repeat it when nothing in the
    // text is ambiguous)
    let reading = text::Reading {
        kept: &kept,
        given,
        repeat: ambiguity == scan::Ambiguity::default(),
    };
    let (decision, tally) =
        text::decide_pieces(sql, &pieces, reading, (origin, ctx, d), &dynamic, activity);
    (decision, ambiguity, tally)
}

/// The decision on a text that does not split in a reading: the backend cannot read it
/// either, in this reading; its error is the answer — unless the backend reads it another way
/// (a backslash after a multibyte lead byte, `"…"` under ANSI_QUOTES): every other reading is
/// tried, as for an ambiguous text.
fn unsplit(sql: &[u8]) -> (Decision, scan::Ambiguity, Tally) {
    (
        unreadable_by_words(sql),
        scan::Ambiguity {
            quotes: true,
            multibyte: true,
            // a SET of the reading state the split did not reach
            state: mentions_reading_state(sql),
            comment: dml::has_executable_comment(sql),
        },
        Tally::default(),
    )
}

/// A text's statements under reading `d` and what in it is ambiguous (its tokens kept in
/// `kept`); None where it does not split (`unsplit`).
fn split(sql: &[u8], d: Dialect, kept: &mut scan::Kept) -> Option<(scan::Pieces, scan::Ambiguity)> {
    let (pieces, mut ambiguity) = scan::statements_keeping(sql, d, kept).ok()?;
    // a statement that changes the reading state before another one: the text is read under
    // every state (issue 31: SET sql_mode = 'NO_BACKSLASH_ESCAPES'; INSERT …)
    ambiguity.state |= changes_reading_state(sql, &pieces, d);
    // A text with an executable comment keeps no tokens: each statement is lexed alone, and
    // one that begins inside the comment reads otherwise alone (a `/*!` in it opens code
    // there, a comment in the text): what its own lexing finds ambiguous is the text's too
    // (found by the state_reading fuzz target: `/*!;DROP $/*!\xDC``` on OceanBase).
    if kept.is_off() {
        for p in pieces.iter().filter(|p| p.start > 0) {
            let mut alone = scan::Scanner::new(sql.get(p.start..p.end).unwrap_or_default(), d);
            alone.by_ref().for_each(drop);
            ambiguity = ambiguity.union(alone.ambiguity);
        }
    }
    Some((pieces, ambiguity))
}

/// Why a dynamic text may not run, if it may not.
fn dynamic_refusal(r: &Read, ctx: &Context) -> Option<Refusal> {
    match r {
        Read::Plain
        | Read::ProxyTrigger(_)
        | Read::Lock(_)
        | Read::Dml(_)
        | Read::Insert(_)
        | Read::Load(_)
        | Read::LoadUnreadable(_)
        | Read::InsertUnreadable(_)
        | Read::ProgramWritesHbase
        | Read::ProgramDynamic
        | Read::TriggerOnHbase
        | Read::DmlUnreadable(_) => None,
        Read::DropProxyTrigger => ctx
            .strict
            .then_some(Refusal::Unchecked(Unchecked::ProxyTrigger)),
        Read::Hbase(stmt) if !names_hbase_object(stmt, &ctx.scope) => None,
        Read::Hbase(_) | Read::Unreadable(_) | Read::ProgramWithHbaseDdl | Read::WrappedDdl => {
            Some(Refusal::DdlPrepared)
        }
        Read::WrappedUnsure => ctx
            .strict
            .then_some(Refusal::Unreadable(Unreadable::DynamicText)),
        Read::View => (ctx.strict && ctx.writes.is_some())
            .then_some(Refusal::Unchecked(Unchecked::UpdatableView)),
        // PREPARE / EXECUTE IMMEDIATE inside a dynamic text is refused by the backend itself
        // (MariaDB 1295, seekdb 1064), whatever it would run
        Read::Dynamic(_) => None,
    }
}

/// The old answer for a text the scanner cannot read: DDL naming an HBase table is refused,
/// anything else goes to the backend, which reports its own syntax error.
fn unreadable_by_words(sql: &[u8]) -> Decision {
    let words = leading_words(sql, 2);
    let ddl_verb = words
        .first()
        .is_some_and(|w| DDL_VERBS.contains(&w.as_str()));
    if ddl_verb
        && (memchr::memchr(b'$', sql).is_some() || words.get(1).is_some_and(|w| w == "TABLEGROUP"))
    {
        return refuse(Refusal::Unreadable(Unreadable::HbaseDdl(None)));
    }
    Decision::forward()
}

fn decide_proxy_command(sql: &[u8], origin: Origin, dialect: Dialect) -> Decision {
    let words = leading_words(sql, 5);
    if words.first().is_some_and(|w| w == "ALTER") {
        if origin == Origin::Prepare {
            return Decision::forward();
        }
        // ALTER SYSTEM: only the four TTL statements, whole, are the proxy's business
        let rest = crate::sql::classify::after_words(sql, 4);
        let ends = rest.iter().all(|&b| b == b';' || b.is_ascii_whitespace());
        return match (words.get(2), words.get(3), words.len(), ends) {
            (Some(w), Some(t), 4, true) if t == "TTL" => {
                match crate::hbase::ttl::Command::from_word(w) {
                    Some(c) => Decision::Answer(Answer::Ttl(c)),
                    None => Decision::forward(),
                }
            }
            _ => Decision::forward(),
        };
    }
    if origin == Origin::Prepare {
        return refuse(Refusal::CommandPrepared);
    }
    if words.first().is_some_and(|w| w == "SET") {
        // SET OBKV HBASE_READS [=] ON|OFF
        let value = crate::sql::classify::after_words(sql, 3);
        let value = value.trim_ascii_start();
        let value = value.strip_prefix(b"=").unwrap_or(value).trim_ascii();
        let value = value.strip_suffix(b";").unwrap_or(value).trim_ascii_end();
        let on = match value.to_ascii_uppercase().as_slice() {
            b"ON" | b"1" | b"TRUE" => Some(true),
            b"OFF" | b"0" | b"FALSE" => Some(false),
            _ => None,
        };
        return match (words.get(2).map(String::as_str), on) {
            (Some("HBASE_READS"), Some(on)) => Decision::Answer(Answer::HbaseReads(Some(on))),
            _ => refuse(Refusal::UnknownCommand(Command::Obkv)),
        };
    }
    let words = &words[..words.len().min(4)];
    if words.first().is_some_and(|w| w == "EXPLAIN") {
        return Decision::Answer(Answer::ExplainObkv);
    }
    if words.get(1).is_some_and(|w| w == "OBKV") {
        let table = || crate::sql::ddl::table_after_for(sql, dialect);
        return match (words.get(2).map(String::as_str), words.len()) {
            (Some("TABLES"), 3) => Decision::Answer(Answer::ObkvTables),
            (Some("HBASE_READS"), 3) => Decision::Answer(Answer::HbaseReads(None)),
            (Some("ADVICE"), 3) => Decision::Answer(Answer::ObkvAdvice(None)),
            (Some("ADVICE"), 4) if words[3] == "FOR" => match table() {
                Ok(Some(t)) => Decision::Answer(Answer::ObkvAdvice(Some(t))),
                _ => refuse(Refusal::UnknownCommand(Command::Obkv)),
            },
            (Some("PARTITIONS"), 4) if words[3] == "FOR" => match table() {
                Ok(Some(t)) => Decision::Answer(Answer::ObkvPartitions(t)),
                _ => refuse(Refusal::UnknownCommand(Command::Obkv)),
            },
            _ => refuse(Refusal::UnknownCommand(Command::Obkv)),
        };
    }
    match words.get(2).map(String::as_str) {
        Some("STATUS") if words.len() == 3 => Decision::Answer(Answer::ProxyStatus),
        Some("CREATE") if words.len() == 4 && words[3] == "TABLEGROUPS" => {
            Decision::Answer(Answer::TablegroupDdl)
        }
        _ => refuse(Refusal::UnknownCommand(Command::Proxy)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::prefix_scan::TableView;
    use crate::engine::text::dollar_names;
    use crate::engine::write::{Txn, WriteRules};
    use crate::hbase::rules::Rule;
    use crate::sql::ddl::TableName;

    fn text(sql: &str) -> Decision {
        decide(sql.as_bytes(), Origin::Text, &Context::default()).1
    }

    fn maria(sql: &str) -> Decision {
        let ctx = Context {
            dialect: Dialect::from_server_version(b"5.5.5-10.11.19-MariaDB"),
            strict: true,
            scope: Scope::default(),
            ..Context::default()
        };
        decide(sql.as_bytes(), Origin::Text, &ctx).1
    }

    /// Whether a decision answers with a refusal that matches the pattern.
    macro_rules! refused {
        ($d:expr, $p:pat) => {
            matches!($d, Decision::Answer(Answer::Refuse($p)))
        };
    }

    #[test]
    fn ttl_statements_are_the_proxys_only_whole() {
        use crate::hbase::ttl::Command;
        let ttl = |sql: &str| match text(sql) {
            Decision::Answer(Answer::Ttl(c)) => Some(c),
            _ => None,
        };
        assert_eq!(ttl("ALTER SYSTEM TRIGGER TTL"), Some(Command::Trigger));
        assert_eq!(
            ttl("/* x */ alter system suspend ttl ;"),
            Some(Command::Suspend)
        );
        assert_eq!(ttl("Alter System Resume TTL"), Some(Command::Resume));
        assert_eq!(ttl("ALTER SYSTEM CANCEL TTL"), Some(Command::Cancel));
        for forwarded in [
            "ALTER SYSTEM SET enable_kv_ttl = true",
            "ALTER SYSTEM TRIGGER TTL TENANT = t1",
            "ALTER SYSTEM TRIGGER TTL; SELECT 1",
            "ALTER SYSTEM MAJOR FREEZE",
        ] {
            assert!(text(forwarded).is_forward(), "{forwarded}");
        }
        let prepared = decide(
            b"ALTER SYSTEM TRIGGER TTL",
            Origin::Prepare,
            &Context::default(),
        )
        .1;
        assert!(prepared.is_forward());
    }

    /// The readings the kept-token tests compare under: the default, NO_BACKSLASH_ESCAPES, and
    /// MariaDB under ANSI_QUOTES.
    fn kept_reading_dialects() -> [Dialect; 3] {
        [
            Dialect::default(),
            Dialect {
                no_backslash_escapes: true,
                ..Dialect::default()
            },
            Dialect {
                ansi_quotes: true,
                ..Dialect::from_server_version(b"5.5.5-10.11.19-MariaDB")
            },
        ]
    }

    #[test]
    fn kept_tokens_read_each_statement_as_lexing_it_alone() {
        let texts: [&[u8]; 8] = [
            b"SELECT K, V FROM `t$f` WHERE K LIKE 'ab%' ORDER BY K LIMIT 5",
            b"SELECT 1; SELECT * FROM db.`t$f` AS x WHERE x.K >= 'a;b' AND K < 'a;c'; DELETE FROM t$f WHERE K = ?",
            b"  UPDATE t$f SET V = 'x' WHERE (K BETWEEN X'00' AND X'00FF') ;; SELECT ';' ; EXPLAIN SELECT V FROM t$f WHERE K IN ('a','b')",
            b"SELECT * FROM t$f WHERE K LIKE 'a\\%' ESCAPE '|'; SELECT \"x;y\" FROM t$f WHERE LEFT(K, 4) = 'abcd'",
            b"SELECT * FROM t$f WHERE K = _binary'\xff\x00;' /* c; */ ; -- x;\nSELECT V FROM t$f WHERE SUBSTRING(K, 1, 8) = ?",
            b"SELECT * FROM t$f WHERE K = 1 OR K = 2; SELECT * FROM (SELECT * FROM t$f) s WHERE K = 'a'",
            b"SELECT * FROM t$f WHERE 'a' <= K AND K <=> 'b' FOR UPDATE; SELECT * FROM t$f WHERE K LIKE ? ESCAPE '!'",
            b"SELECT\tK FROM t$f\nWHERE K > 0x61 AND K < 0x62 LOCK IN SHARE MODE;SELECT K FROM t$f WHERE K=''",
        ];
        let scope = Scope::default();
        for sql in texts {
            for d in kept_reading_dialects() {
                let mut kept = scan::Kept::new(dml::MAX_TOKENS + 1);
                let (pieces, _) = scan::statements_keeping(sql, d, &mut kept).expect("lexes");
                assert_eq!(pieces, statements(sql, d).expect("lexes").0);
                let mut dml_pieces = 0;
                for p in &pieces {
                    let shared = read_piece(sql, *p, d, &scope, true, Some(&kept));
                    let alone = read_piece(sql, *p, d, &scope, true, None);
                    assert_eq!(shared, alone, "{}", String::from_utf8_lossy(sql));
                    dml_pieces += usize::from(matches!(alone, Read::Dml(_)));
                }
                assert!(dml_pieces > 0, "{}", String::from_utf8_lossy(sql));
            }
        }
        // beyond the bound nothing is kept, and the reader lexes the statement itself
        let long = format!("SELECT K FROM t$f WHERE K IN ({}'a')", "'a',".repeat(3000));
        let mut kept = scan::Kept::new(dml::MAX_TOKENS + 1);
        let (pieces, _) = scan::statements_keeping(long.as_bytes(), Dialect::default(), &mut kept)
            .expect("lexes");
        assert_eq!(kept.of(&pieces[0]), None);
        assert_eq!(
            read_piece(
                long.as_bytes(),
                pieces[0],
                Dialect::default(),
                &scope,
                true,
                Some(&kept)
            ),
            Read::DmlUnreadable("statement too long to analyse")
        );
    }

    #[test]
    fn kept_tokens_read_each_insert_as_lexing_it_alone() {
        use crate::sql::insert;
        let texts: [&[u8]; 6] = [
            b"INSERT INTO t$f (K, Q, T, V) VALUES ('a;b', 'q', -1, 'v'), (X'00', ?, - - 2, _binary'\xff')",
            b"SELECT 1; REPLACE IGNORE INTO db.`t$f` SET K = 'k', Q = \"q;\", V = 'v\\'' ; INSERT t$f VALUES (1,2,3,4) ON DUPLICATE KEY UPDATE V = 'w'",
            b"  INSERT INTO t$f PARTITION (p0) (K, V) SELECT K, V FROM u ;; INSERT INTO t$f (K) VALUE (DEFAULT), ()",
            b"INSERT LOW_PRIORITY INTO t$f (t$f.K, db.t$f.V) VALUES ('x' /* ; */, CONCAT('a', 'b')) AS n (a, b)",
            b"INSERT INTO t$f (K, Q, T, V) VALUES ('k', 'q', 1, 'v') -- ;\n; INSERT INTO t$f (K) VALUES (",
            b"SELECT 2; SET STATEMENT max_statement_time = 1 FOR /* ; */ INSERT INTO t$f (K, V) VALUES ('a', 'b')",
        ];
        let scope = Scope::default();
        for sql in texts {
            for d in kept_reading_dialects() {
                let mut kept = scan::Kept::new(dml::MAX_TOKENS + 1);
                // (a text some reading cannot lex, `'v\''` without backslash escapes, is not kept)
                let Ok((pieces, _)) = scan::statements_keeping(sql, d, &mut kept) else {
                    continue;
                };
                let mut inserts = 0;
                for p in &pieces {
                    let shared = read_executed(sql, *p, d, &scope, true, Some(&kept));
                    let alone = read_executed(sql, *p, d, &scope, true, None);
                    assert_eq!(shared, alone, "{}", String::from_utf8_lossy(sql));
                    // the statement that runs (past a SET STATEMENT … FOR), as the text reads it
                    let p = &alone.1;
                    let piece = &sql[p.start..p.end];
                    let lexed = kept.of(p).expect("kept");
                    let rows = |lexed: Option<&[scan::Token]>| {
                        let mut rows = Vec::new();
                        let r = insert::read_lexed(piece, d, lexed, |_, row| {
                            rows.push((
                                row.values
                                    .iter()
                                    .cloned()
                                    .map(insert::Value::into_owned)
                                    .collect::<Vec<_>>(),
                                row.spans.to_vec(),
                                row.close,
                            ));
                            std::ops::ControlFlow::Continue(())
                        });
                        (r, rows)
                    };
                    let (r, rows_alone) = rows(None);
                    assert_eq!(rows(Some(&lexed)), (r.clone(), rows_alone));
                    inserts += usize::from(matches!(r, insert::Read::Insert { .. }));
                    assert_eq!(
                        insert::read_head(piece, d, Some(&lexed)),
                        insert::read_head(piece, d, None)
                    );
                }
                assert!(inserts > 0, "{}", String::from_utf8_lossy(sql));
            }
        }
    }

    #[test]
    fn hbase_ddl_is_routed_to_the_session() {
        assert!(matches!(text("CREATE TABLEGROUP g"), Decision::Ddl(_)));
        assert!(matches!(
            text("CREATE TABLE g$f (K varbinary(10))"),
            Decision::Ddl(_)
        ));
        assert!(refused!(
            &decide(
                b"CREATE TABLE g$f (K varbinary(10))",
                Origin::Prepare,
                &Context::default()
            )
            .1,
            Refusal::DdlPrepared
        ));
        assert!(refused!(
            &text("CREATE TABLEGROUP g; SELECT 1"),
            Refusal::DdlNotAlone(Alone::InMultiStatement)
        ));
        assert_eq!(text("CREATE TABLE plain (a int)"), Decision::forward());
        assert_eq!(text("SELECT * FROM g$f"), Decision::forward());
        assert!(refused!(
            &text("CREATE TABLE g$f ("),
            Refusal::Unreadable(Unreadable::HbaseDdl(Some(_)))
        ));
    }

    #[test]
    fn plain_is_forwarded_and_proxy_commands_answered() {
        assert_eq!(text("select 1"), Decision::forward());
        assert_eq!(
            text("show proxy status"),
            Decision::Answer(Answer::ProxyStatus)
        );
        assert!(refused!(
            &decide(b"show proxy status", Origin::Prepare, &Context::default()).1,
            Refusal::CommandPrepared
        ));
        assert!(refused!(
            &text("show proxy nonsense"),
            Refusal::UnknownCommand(Command::Proxy)
        ));
    }

    #[test]
    fn executable_comments_are_read_as_code() {
        // each hides DDL on an HBase table that the backend runs
        for sql in [
            "ALTER TABLE g$f /*! ADD COLUMN X int */",
            "/*!50100 ALTER TABLE g$f ADD COLUMN X int */",
            "SELECT 1 /*!; ALTER TABLE g$f ADD COLUMN X int */",
        ] {
            let d = maria(sql);
            assert!(
                matches!(d, Decision::Ddl(_))
                    || refused!(&d, Refusal::DdlNotAlone(Alone::InMultiStatement)),
                "{sql}: {d:?}"
            );
        }
        assert!(refused!(
            &maria("SELECT 1; /*M! ALTER TABLE g$f ADD COLUMN X int */"),
            Refusal::DdlNotAlone(Alone::InMultiStatement)
        ));
        // on a non-MariaDB backend /*M! is a comment
        assert_eq!(
            text("SELECT 1 /*M! ; ALTER TABLE g$f ADD COLUMN X int */"),
            Decision::forward()
        );
        // a version MySQL 5.7 does not reach is a comment there, but OceanBase (whose greeting
        // also says 5.7.25) runs it: until the server is known, the proxy refuses
        assert!(refused!(
            &text("SELECT 1 /*!99999 ; DROP TABLE g$f */"),
            Refusal::Unreadable(Unreadable::Ambiguous)
        ));
        let mysql = Context {
            dialect: Dialect {
                flavor: scan::Flavor::MySql,
                ..Dialect::default()
            },
            strict: true,
            scope: Scope::default(),
            ..Context::default()
        };
        let sql = b"SELECT 1 /*!99999 ; DROP TABLE g$f */";
        assert_eq!(decide(sql, Origin::Text, &mysql).1, Decision::forward());
        // MariaDB leaves MySQL 5.7+ comments alone
        assert_eq!(
            maria("SELECT 1 /*!50700 ; DROP TABLE g$f */"),
            Decision::forward()
        );
        // OceanBase runs the code after five digits, or reads the comment as a comment where
        // the code does not parse: HBase DDL in one reading only is refused
        let ob = Context {
            dialect: Dialect {
                flavor: scan::Flavor::OceanBase,
                ..Dialect::default()
            },
            strict: true,
            scope: Scope::default(),
            ..Context::default()
        };
        for sql in [
            b"SELECT 1 /*!999999 ; DROP TABLE g$f */".as_slice(),
            b"SELECT 1 /*!123 ; DROP TABLE g$f */",
        ] {
            // (the code reading refuses the whole text by itself: its refusal is the answer)
            assert!(refused!(
                &decide(sql, Origin::Text, &ob).1,
                Refusal::DdlNotAlone(Alone::InMultiStatement)
            ));
        }
        // where the code reading alone would let the text through, the disagreement refuses
        let sql = b"SELECT 1 /*!99999 ; SELECT 2 */ ; DROP TABLE g$f -- */";
        assert!(refused!(
            &decide(sql, Origin::Text, &ob).1,
            Refusal::Unreadable(Unreadable::Ambiguous) | Refusal::DdlNotAlone(_)
        ));
        // a comment that changes nothing of the HBase statement is read as it is
        let sql = b"SELECT /*!50726 SQL_NO_CACHE */ K FROM g$f";
        assert_eq!(decide(sql, Origin::Text, &ob).1, Decision::forward());
        // a statement that begins inside the comment is lexed alone, where a `/*!` in it opens
        // code: what that lexing finds ambiguous (a backquote after a multibyte lead byte) is
        // read both ways, and the readings that make it HBase DDL refuse the text (found by
        // the state_reading fuzz target)
        let sql = b"/*!;DROP $/*!\xdc``";
        assert!(matches!(
            decide(sql, Origin::Text, &ob).1,
            Decision::Answer(Answer::Refuse(_))
        ));
    }

    #[test]
    fn every_statement_of_a_text_is_read() {
        assert!(refused!(
            &text("SELECT 1; ALTER TABLE g$f ADD COLUMN X int"),
            Refusal::DdlNotAlone(Alone::InMultiStatement)
        ));
        assert!(refused!(
            &text("SELECT 1;\nDROP TABLEGROUP g"),
            Refusal::DdlNotAlone(Alone::InMultiStatement)
        ));
        assert_eq!(text("SELECT 'a;b'; SELECT * FROM g$f"), Decision::forward());
    }

    #[test]
    fn dynamic_sql_is_checked() {
        assert!(refused!(
            &text("PREPARE s FROM 'ALTER TABLE g$f ADD COLUMN X int'"),
            Refusal::DdlPrepared
        ));
        assert!(refused!(
            &text("EXECUTE IMMEDIATE 'CREATE TABLEGROUP g'"),
            Refusal::DdlPrepared
        ));
        assert!(refused!(
            &text("PREPARE s FROM X'414C544552205441424C452067246620414444205820696E74'"),
            Refusal::DdlPrepared
        ));
        assert_eq!(
            text("PREPARE s FROM 'SELECT * FROM g$f WHERE K = ?'"),
            Decision::forward()
        );
        assert_eq!(
            text("PREPARE s FROM @stmt"),
            Decision::Need(Need {
                variables: vec![b"@stmt".to_vec()],
                ..Need::default()
            })
        );
        assert!(refused!(
            &text("SET @s = 'x'; PREPARE s FROM @s"),
            Refusal::Unchecked(Unchecked::VariableSetInText)
        ));
        // MariaDB computes an expression: the session reads its value (and refuses this one)
        assert_eq!(
            maria("EXECUTE IMMEDIATE CONCAT('ALTER TABLE g', '$f ADD X int')"),
            Decision::Need(Need {
                variables: vec![b"CONCAT('ALTER TABLE g', '$f ADD X int')".to_vec()],
                ..Need::default()
            })
        );
        // MySQL and OceanBase take none: their own syntax error
        assert_eq!(
            text("EXECUTE IMMEDIATE CONCAT('ALTER TABLE g', '$f ADD X int')"),
            Decision::forward()
        );
        assert_eq!(text("EXECUTE s USING @a"), Decision::forward());
        // a variable mentioned only after its PREPARE is read before the text runs
        assert_eq!(
            text("PREPARE s FROM @S; SET @s = 'x'"),
            Decision::Need(Need {
                variables: vec![b"@S".to_vec()],
                ..Need::default()
            })
        );
        assert!(refused!(
            &text("SELECT @`s` := 'x'; PREPARE s FROM @s"),
            Refusal::Unchecked(Unchecked::VariableSetInText)
        ));
        assert!(decide_dynamic(b"DROP TABLE g$f", &Context::default()).is_some());
        assert!(decide_dynamic(b"SELECT K FROM g$f", &Context::default()).is_none());
        assert!(decide_dynamic(
            b"CREATE TABLE t (K int, Q int, T int, V int)",
            &Context::default()
        )
        .is_none());
    }

    #[test]
    fn dynamic_sql_naming_no_hbase_table_or_refused_by_the_backend_is_forwarded() {
        // a "…" is a string, or under ANSI_QUOTES a name the backend refuses (1054, 1064)
        for sql in [
            "PREPARE s FROM \"select * from t1 where a=?\"",
            "EXECUTE IMMEDIATE \"select 'x'\"",
            "PREPARE s FROM 'select ' \"1\"",
            "PREPARE s FROM \"select \\\" 1\"",
            "PREPARE s FROM \"select 'a\\\"b', \\\"c\\\"\"",
        ] {
            assert_eq!(text(sql), Decision::forward(), "{sql}");
            assert_eq!(maria(sql), Decision::forward(), "{sql}");
        }
        // … and one that names HBase DDL as a string is refused all the same
        for sql in [
            "PREPARE s FROM \"DROP TABLE g$f\"",
            "EXECUTE IMMEDIATE \"ALTER TABLE g$f ADD X int\"",
            "PREPARE s FROM 'ALTER TABLE g' \"$f ADD X int\"",
        ] {
            assert!(
                refused!(&text(sql), Refusal::DdlPrepared),
                "{sql}: {:?}",
                text(sql)
            );
            assert!(
                refused!(&maria(sql), Refusal::DdlPrepared),
                "{sql}: {:?}",
                maria(sql)
            );
        }
        // with the write rules a statement of its own goes to the session with its text
        let ctx = checked_ctx();
        let Decision::Dynamic(x) = decide(b"PREPARE s FROM \"select ?\"", Origin::Text, &ctx).1
        else {
            panic!("not dynamic")
        };
        assert_eq!(x.source, DynamicSource::Literal(b"select ?".to_vec()));
        // what the backend refuses as syntax, a subquery or a column: its own error
        for sql in [
            "PREPARE s FROM SELECT 1",
            "PREPARE s FROM",
            "prepare stmt1 from ;",
            "PREPARE s FROM ?",
            "PREPARE ? FROM 'DROP TABLE g$f'",
            "PREPARE s FROM 'select 1', 'x'",
            "PREPARE s FROM (SELECT 'DROP TABLE g$f')",
            "EXECUTE IMMEDIATE CONCAT((SELECT t FROM x), 'y')",
            "PREPARE s FROM `DROP TABLE g$f`",
            "EXECUTE IMMEDIATE CONCAT(`c`, 'x')",
        ] {
            assert_eq!(maria(sql), Decision::forward(), "{sql}");
            assert_eq!(text(sql), Decision::forward(), "{sql}");
        }
        // MariaDB computes an expression of literals, variables and pure built-in functions
        for (sql, expr) in [
            (
                "PREPARE s FROM concat('select ', @a)",
                "concat('select ', @a)",
            ),
            (
                "EXECUTE IMMEDIATE CONVERT(@q USING utf8mb4) USING @a",
                "CONVERT(@q USING utf8mb4)",
            ),
            (
                "EXECUTE IMMEDIATE IF(@x IS NULL, 'DO 0', REPLACE(@y, 'a', \"b\"))",
                "IF(@x IS NULL, 'DO 0', REPLACE(@y, 'a', \"b\"))",
            ),
        ] {
            assert_eq!(
                maria(sql),
                Decision::Need(Need {
                    variables: vec![expr.as_bytes().to_vec()],
                    ..Need::default()
                }),
                "{sql}"
            );
        }
        assert!(refused!(
            &maria("SET @a = 'x'; PREPARE s FROM CONCAT('select ', @a)"),
            Refusal::Unchecked(Unchecked::VariableSetInText)
        ));
        // values it cannot compute without running something: refused in strict mode
        for sql in [
            "PREPARE s FROM CONCAT('select ', RAND())",
            "EXECUTE IMMEDIATE CONCAT(@a := 'DROP TABLE g', CHAR(36), 'f')",
            "PREPARE s FROM NEXT VALUE FOR sq",
            "PREPARE s FROM f()",
            "PREPARE s FROM CONCAT(@@sql_mode)",
            "PREPARE s FROM CONCAT('x' /*!, 'y' */)",
            "PREPARE s FROM current_user",
        ] {
            assert!(
                refused!(
                    &maria(sql),
                    Refusal::Unchecked(Unchecked::DynamicExpression)
                ),
                "{sql}: {:?}",
                maria(sql)
            );
        }
        // dynamic SQL inside dynamic SQL: the backend refuses it (1295, 1064)
        let inner = b"PREPARE t FROM CONCAT(@a)";
        assert!(decide_dynamic(inner, &Context::default()).is_none());
    }

    #[test]
    fn stored_programs_with_hbase_ddl_are_refused_in_strict_mode() {
        let sql = "CREATE PROCEDURE p() BEGIN DROP TABLE g$f; END";
        assert!(refused!(
            &text(sql),
            Refusal::Unchecked(Unchecked::ProgramDdl)
        ));
        let lax = Context {
            strict: false,
            ..Context::default()
        };
        assert_eq!(
            decide(sql.as_bytes(), Origin::Text, &lax).1,
            Decision::forward()
        );
        assert_eq!(
            text("CREATE PROCEDURE p() BEGIN SELECT * FROM g$f; END"),
            Decision::forward()
        );
    }

    #[test]
    fn dynamic_writes_go_to_the_session_with_their_name_and_values() {
        let ctx = Context {
            dialect: Dialect::from_server_version(b"5.5.5-10.11.19-MariaDB"),
            writes: Some(WriteRules::default()),
            ..Context::default()
        };
        let d = |sql: &[u8]| decide(sql, Origin::Text, &ctx).1;
        let Decision::Dynamic(x) = d(b"PREPARE Ins FROM 'INSERT INTO g$f VALUES (?, ?, ?, ?)'")
        else {
            panic!("not dynamic")
        };
        assert_eq!(x.head.name.as_deref(), Some(b"ins".as_slice()));
        assert_eq!(
            x.source,
            DynamicSource::Literal(b"INSERT INTO g$f VALUES (?, ?, ?, ?)".to_vec())
        );
        let Decision::Dynamic(x) = d(b"EXECUTE IMMEDIATE @s USING @k, 'q'") else {
            panic!("not dynamic")
        };
        assert_eq!(x.source, DynamicSource::Computed(b"@s".to_vec()));
        assert_eq!(x.head.using, Some(vec![b"@k".to_vec(), b"'q'".to_vec()]));
        // values whose extent depends on the character set: refused, not guessed
        let ambiguous: &[u8] =
            b"EXECUTE IMMEDIATE 'INSERT INTO g$f VALUES (?, ?, ?, ?)' USING '\xbf\\', @q, @t, @v";
        assert!(
            refused!(&d(ambiguous), Refusal::Unreadable(Unreadable::Ambiguous)),
            "{:?}",
            d(ambiguous)
        );
        // the text's own check: literals now, a T left out refused, executions planned
        let c = |sql: &str| check_dynamic(sql.as_bytes(), &ctx);
        assert_eq!(c("SELECT 1"), DynamicCheck::Runs);
        assert!(matches!(
            c("DROP TABLE g$f"),
            DynamicCheck::Refused(Refusal::DdlPrepared)
        ));
    }

    #[test]
    fn a_text_unreadable_one_way_is_read_the_other_ways() {
        // unterminated as ASCII; under gbk 0xBF 0x5C is one character and the DROP runs
        let sql: &[u8] = b"SELECT '\xbf\\'; DROP TABLE g$f; -- ";
        let strict = Context::default();
        let got = decide(sql, Origin::Text, &strict).1;
        assert!(
            matches!(
                got,
                Decision::Answer(Answer::Refuse(Refusal::Unreadable(_)))
            ),
            "{got:?}"
        );
        let lax = Context {
            strict: false,
            ..Context::default()
        };
        assert_eq!(decide(sql, Origin::Text, &lax).1, Decision::forward());
        // a read the other reading needs a table's schema for: the facts are read first, and
        // then the readings agree (a read is forwarded, only not rewritten)
        let mut view = crate::engine::prefix_scan::tests::view();
        view.settled = false;
        // the session's character set not known yet: it may be one with such characters
        view.charset = None;
        let ctx = Context {
            tables: Some(view),
            writes: Some(WriteRules::default()),
            ..Context::default()
        };
        let read: &[u8] = b"SELECT K FROM x$f WHERE K = _binary'\xff\\' AND Q = 'q'";
        assert_eq!(
            decide(read, Origin::Text, &ctx).1,
            Decision::Need(Need {
                charset: true,
                ..Need::default()
            })
        );
        // under a UTF-8 session the backslash is an escape whatever came before it: one
        // reading, one unterminated string, and the backend's own error answers it
        let utf8 = Context {
            tables: ctx.tables.clone().map(|t| TableView {
                charset: Some(crate::engine::prefix_scan::ConnCharset::Utf8),
                settled: true,
                ..t
            }),
            ..ctx.clone()
        };
        assert!(decide(sql, Origin::Text, &utf8).1.is_forward());
        assert!(matches!(
            decide(read, Origin::Text, &ctx).1,
            Decision::Need(_)
        ));
        let settled = Context {
            tables: ctx.tables.clone().map(|t| TableView { settled: true, ..t }),
            ..ctx.clone()
        };
        assert_eq!(decide(read, Origin::Text, &settled).1, Decision::forward());
        // unreadable every way: the backend's own error answers it
        assert_eq!(
            decide(b"SELECT 'g$f", Origin::Text, &strict).1,
            Decision::forward()
        );
    }

    /// Found by the state_reading fuzz target: readings that agree on the partition a write
    /// takes but not on where the write stage fills T in (an executable comment OceanBase may
    /// read as a plain comment). The write is refused in strict mode; otherwise it goes as
    /// written, and the transaction's guard still has its partition.
    #[test]
    fn a_write_whose_readings_fill_t_apart_keeps_its_partition_or_is_refused() {
        let sql: &[u8] = b"INSERT g$f SET K='a',Q=/*!\xff";
        let ctx = |strict: bool| Context {
            dialect: Dialect {
                no_backslash_escapes: true,
                ..Dialect::default()
            },
            strict,
            tables: Some(crate::engine::prefix_scan::tests::view()),
            writes: Some(WriteRules::default()),
            txn: Txn {
                active: true,
                pinned: None,
            },
            ..Context::default()
        };
        // each reading alone fills T in and fixes the transaction's partition
        let as_mysql = decide_as_read(sql, Origin::Text, &ctx(true), Dialect::default());
        let Some(Decision::Send(w)) = as_mysql else {
            panic!("{as_mysql:?}")
        };
        assert!(
            w.text.is_some() && matches!(w.txn_after, Some(Some(_))),
            "{w:?}"
        );
        let strict = decide(sql, Origin::Text, &ctx(true)).1;
        assert!(
            refused!(&strict, Refusal::Unreadable(Unreadable::Ambiguous)),
            "{strict:?}"
        );
        match decide(sql, Origin::Text, &ctx(false)).1 {
            Decision::Send(l) => {
                assert_eq!(l.text, None, "read two ways: not rewritten");
                assert_eq!(l.txn_after, w.txn_after, "the guard keeps the partition");
                assert!(l.checked);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn stored_programs_writing_hbase_tables_are_refused_in_strict_mode() {
        let ctx = Context {
            writes: Some(WriteRules::default()),
            ..Context::default()
        };
        let d = |sql: &str| decide(sql.as_bytes(), Origin::Text, &ctx).1;
        for sql in [
            "CREATE PROCEDURE p() BEGIN INSERT INTO g$f VALUES ('k', 'q', -1, 'v'); END",
            "CREATE PROCEDURE p(k varbinary(9)) DELETE FROM db.g$f WHERE K = k",
            "CREATE TRIGGER tr AFTER INSERT ON plain FOR EACH ROW UPDATE `g$f` SET V = NEW.v",
            "CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO REPLACE g$f (K, Q, T, V) VALUES ('k', 'q', -1, 'v')",
            "BEGIN NOT ATOMIC SELECT 1; LOAD DATA INFILE '/f' INTO TABLE g$f; END",
            "CREATE FUNCTION f() RETURNS int BEGIN DELETE g FROM g$f AS g WHERE K = 'k'; RETURN 1; END",
            // an event's body changed later, and dynamic SQL of a literal in a body (issue 31)
            "ALTER EVENT e DO INSERT INTO g$f (K, Q, T, V) VALUES ('k', 'q', 5, 'v')",
            "ALTER DEFINER = CURRENT_USER EVENT e ON SCHEDULE EVERY 1 DAY DO BEGIN SELECT 1; REPLACE g$f VALUES ('k', 'q', 5, 'v'); END",
            "CREATE PROCEDURE p() BEGIN PREPARE s FROM 'INSERT INTO g$f (K, Q, T, V) VALUES (''k'', ''q'', 5, ''v'')'; EXECUTE s; END",
            "CREATE PROCEDURE p() EXECUTE IMMEDIATE 'UPDATE g$f SET T = 5'",
            // anonymous blocks of MariaDB's sql_mode=ORACLE
            "BEGIN INSERT INTO g$f (K, Q, T, V) VALUES ('k', 'q', 5, 'v'); END",
            "DECLARE x INT; BEGIN UPDATE g$f SET V = 'x' WHERE K = 'k'; END",
            // found by a review: the statement SET STATEMENT … FOR runs, and an UPDATE's
            // table references after a derived table
            "CREATE PROCEDURE p() SET STATEMENT max_statement_time = 10 FOR INSERT INTO g$f VALUES ('k', 'q', 5, 'v')",
            "BEGIN NOT ATOMIC SET STATEMENT max_statement_time = 10 FOR UPDATE g$f SET T = 5; END",
            "CREATE PROCEDURE p() UPDATE plain JOIN (SELECT 1 AS z) d ON 1 JOIN g$f ON g$f.K = 'k' SET g$f.T = 9",
            // (and by the review of those fixes) tables inside parentheses
            "CREATE PROCEDURE p() UPDATE (`g$f`) SET T = 9 WHERE K = 'a'",
            "CREATE PROCEDURE p() UPDATE ((SELECT 1 AS z) d JOIN g$f ON 1) SET g$f.T = 9",
        ] {
            assert!(refused!(&d(sql), Refusal::Unchecked(Unchecked::ProgramWrites)), "{sql}: {:?}", d(sql));
        }
        // dynamic SQL whose text is not one literal: what it runs is not known before it runs
        for sql in [
            "CREATE PROCEDURE p() BEGIN SET @s = CONCAT('INSERT INTO g', CHAR(36), 'f VALUES (1)'); PREPARE st FROM @s; EXECUTE st; END",
            "CREATE PROCEDURE p() EXECUTE IMMEDIATE CONCAT('UPDATE g', CHAR(36), 'f SET T = 5')",
            "CREATE PROCEDURE p(s TEXT) EXECUTE IMMEDIATE s",
            "CREATE PROCEDURE p() EXECUTE IMMEDIATE 'UPDATE g' '$f SET T = 5'",
            "CREATE PROCEDURE p() PREPARE st FROM _latin1'UPDATE g$f SET T = 5'",
            "CREATE PROCEDURE p() BEGIN PREPARE s FROM 'UPDATE d.g' || '$f SET T = 8'; EXECUTE s; END",
        ] {
            assert!(refused!(&d(sql), Refusal::Unchecked(Unchecked::ProgramDynamic)), "{sql}: {:?}", d(sql));
        }
        for sql in [
            // reads of HBase tables
            "CREATE PROCEDURE p() BEGIN SELECT * FROM g$f FOR UPDATE; END",
            "CREATE PROCEDURE p() INSERT INTO plain SELECT K FROM g$f",
            "CREATE PROCEDURE p() DELETE FROM plain WHERE x IN (SELECT K FROM g$f)",
            "CREATE PROCEDURE p() UPDATE plain SET x = (SELECT COUNT(*) FROM g$f)",
            "CREATE PROCEDURE p() INSERT INTO plain VALUES (1) ON DUPLICATE KEY UPDATE x = 2",
            "CREATE PROCEDURE p() BEGIN SELECT x FROM plain FOR UPDATE; UPDATE plain SET x = 1; END",
            "CREATE PROCEDURE p() UPDATE plain JOIN (SELECT K FROM g$f) d ON 1 SET plain.x = d.K",
            "CREATE PROCEDURE p() BEGIN PREPARE st FROM 'SELECT K FROM g$f'; EXECUTE st; END",
            "CREATE PROCEDURE p() SET STATEMENT max_statement_time = 10 FOR SELECT * FROM g$f",
            "CREATE PROCEDURE p() EXECUTE IMMEDIATE 'SELECT ?' USING 1",
        ] {
            assert_eq!(d(sql), Decision::forward(), "{sql}");
        }
        // a trigger on an HBase table rewrites checked cells, whatever its body (issue 31)
        let sql = "CREATE TRIGGER tr BEFORE INSERT ON g$f FOR EACH ROW SET NEW.V = REPLACE(NEW.V, 'a', 'b')";
        assert!(
            refused!(&d(sql), Refusal::Unchecked(Unchecked::TriggerOnHbase)),
            "{sql}"
        );
        // not strict: forwarded
        let lax = Context {
            strict: false,
            ..ctx.clone()
        };
        let sql = b"CREATE PROCEDURE p() INSERT INTO g$f VALUES ('k', 'q', -1, 'v')";
        assert_eq!(decide(sql, Origin::Text, &lax).1, Decision::forward());
    }

    /// Strict write rules over the test view (`hb.g$f`, KEY(K_PREFIX)).
    fn checked_ctx() -> Context {
        Context {
            writes: Some(WriteRules::default()),
            tables: Some(crate::engine::prefix_scan::tests::view()),
            ..Context::default()
        }
    }

    /// What a decision refuses with, if it refuses.
    fn refusal_of(d: &Decision) -> Option<&Refusal> {
        match d {
            Decision::Answer(Answer::Refuse(r)) => Some(r),
            Decision::Send(w) => w.refused.as_deref(),
            _ => None,
        }
    }

    #[test]
    fn a_t_given_as_a_string_literal_is_read_as_the_backend_reads_it() {
        let ctx = checked_ctx();
        let rule = |t: &str| {
            let sql = format!("INSERT INTO g$f (K, Q, T, V) VALUES ('abcd1', 'q', {t}, 'v')");
            let d = decide(sql.as_bytes(), Origin::Text, &ctx).1;
            match &d {
                Decision::Send(w) => w
                    .refused
                    .as_deref()
                    .and_then(Refusal::rule)
                    .or_else(|| w.notes.first().map(|_| Rule::C8)),
                _ => refusal_of(&d).and_then(Refusal::rule),
            }
        };
        assert_eq!(rule("'5'"), Some(Rule::C4));
        assert_eq!(rule("_utf8mb4' 5 '"), Some(Rule::C4));
        assert_eq!(rule("'5abc'"), Some(Rule::C4));
        assert_eq!(rule("'-1763700000000'"), None);
        // hex or _binary: the backend reads one as a number, the other as a string: noted
        assert_eq!(rule("X'35'"), Some(Rule::C8));
        assert_eq!(rule("_binary'5'"), Some(Rule::C8));
    }

    #[test]
    fn reads_are_never_refused_for_their_size() {
        // past every reader's token limit: a read goes to the backend (outside a transaction),
        // an UPDATE the proxy cannot follow is C9, and the refusal names the statement kind
        let ctx = checked_ctx();
        let many = "'a',".repeat(70_000);
        let select = format!("SELECT * FROM g$f WHERE K IN ({many} 'b')");
        let d = decide(select.as_bytes(), Origin::Text, &ctx).1;
        assert!(d.is_forward(), "{:?}", refusal_of(&d));
        let locking = format!("{select} FOR UPDATE");
        assert!(decide(locking.as_bytes(), Origin::Text, &ctx)
            .1
            .is_forward());
        // an UPDATE's long WHERE clause is not read (its SET list is); a SET list past the
        // limit is C9, named an UPDATE
        let update = format!("UPDATE g$f SET V = 'x' WHERE K IN ({many} 'b')");
        let d = decide(update.as_bytes(), Origin::Text, &ctx).1;
        assert!(refusal_of(&d).is_none(), "{d:?}");
        let update = format!("UPDATE g$f SET V = CONCAT({many} 'b') WHERE K = 'k'");
        let d = decide(update.as_bytes(), Origin::Text, &ctx).1;
        let r = refusal_of(&d).expect("an UPDATE too long to read");
        assert_eq!(r.rule(), Some(Rule::C9), "{r:?}");
        assert!(r.to_error().message.contains("UPDATE"), "{r:?}");
    }

    #[test]
    fn updates_in_every_shape_have_their_set_list_checked() {
        let ctx = checked_ctx();
        let d = |sql: &str| refusal_of(&decide(sql.as_bytes(), Origin::Text, &ctx).1).cloned();
        for (sql, rule) in [
            ("UPDATE g$f a JOIN o b ON a.K = b.k SET a.K = 'x'", Rule::C7),
            ("UPDATE o b, hb.g$f SET g$f.T = 1", Rule::C7),
            ("UPDATE o JOIN g$f ON 1 SET V = NULL", Rule::C3),
            ("UPDATE g$f SET V = 'x', Q = 'y' WHERE K IN (SELECT k FROM o)", Rule::C7),
            ("UPDATE g$f PARTITION (p1) SET K_PREFIX = 'x'", Rule::C6),
            ("UPDATE g$f FORCE INDEX (PRIMARY) SET V = X'00', T = 5 WHERE K = 'k'", Rule::C7),
            ("ANALYZE UPDATE g$f SET K := 'x' WHERE K = 'k'", Rule::C7),
            ("WITH c AS (SELECT 1) UPDATE g$f SET V = REPEAT('x', 40), T = -1", Rule::C7),
            ("UPDATE g$f a JOIN o b ON 1 SET a.V = '0123456789012345678901234567890123'", Rule::C2),
            ("INSERT INTO g$f SELECT * FROM o ON DUPLICATE KEY UPDATE Q = 'q'", Rule::C7),
            ("INSERT INTO g$f (K, Q, T, V) VALUES ('k', 'q', -1, 'v') ON DUPLICATE KEY UPDATE V = NULL", Rule::C3),
            ("INSERT INTO g$f SET K := '', Q = 'q', T = -1, V = 'v'", Rule::C1),
            // INSERTs the reader cannot follow: C9 (rows, head)
            ("INSERT INTO g$f VALUES 'k'", Rule::C9),
            ("INSERT INTO hb.g$f (K) SET K = 'k'", Rule::C9),
        ] {
            assert_eq!(d(sql).as_ref().and_then(Refusal::rule), Some(rule), "{sql}");
        }
        for sql in [
            "UPDATE o b JOIN g$f a ON a.K = b.k SET b.K = 'x', b.v = a.V",
            "UPDATE g$f a JOIN o b ON 1 SET a.V = b.v",
            "UPDATE g$f SET V = 'x' WHERE K IN (SELECT k FROM o)",
            "EXPLAIN UPDATE g$f a JOIN o b ON 1 SET a.K = 'x'",
            "INSERT INTO g$f SELECT * FROM o ON DUPLICATE KEY UPDATE V = 'v'",
        ] {
            assert_eq!(d(sql), None, "{sql}");
        }
    }

    #[test]
    fn double_quotes_are_read_as_strings_and_as_names() {
        let ctx = checked_ctx();
        let d = |sql: &str| decide(sql.as_bytes(), Origin::Text, &ctx).1;
        // a name only under ANSI_QUOTES: what it writes is checked all the same
        for sql in [
            "INSERT INTO \"g$f\" VALUES ('', 'q', -1, 'v')",
            "UPDATE \"g$f\" SET T = 1 WHERE K = 'k'",
            "UPDATE g$f SET \"T\" = 1 WHERE K = 'k'",
        ] {
            assert!(refusal_of(&d(sql)).is_some(), "{sql}: {:?}", d(sql));
        }
        // strings in the usual reading, the same effect either way: checked, T filled in
        let Decision::Send(w) = d("INSERT INTO g$f (K, Q, V) VALUES (\"k\", \"q\", \"v\")") else {
            panic!("not a write");
        };
        assert!(w.refused.is_none() && w.text.is_some());
        // a rewrite that holds in one reading only is not made
        assert_eq!(
            d("SELECT * FROM g$f WHERE K LIKE \"abcd%\""),
            Decision::forward()
        );
        // inside a transaction a reading that places the row and one that cannot disagree
        let txn = Context {
            txn: write::Txn {
                active: true,
                ..Default::default()
            },
            ..ctx.clone()
        };
        let sql = b"INSERT INTO g$f (K, Q, T, V) VALUES (\"k\", 'q', -1, 'v')";
        assert!(refusal_of(&decide(sql, Origin::Text, &txn).1).is_some());
        assert!(refusal_of(
            &decide(
                b"INSERT INTO g$f (K, Q, T, V) VALUES ('k', 'q', -1, 'v')",
                Origin::Text,
                &txn
            )
            .1
        )
        .is_none());
    }

    #[test]
    fn a_prepared_insert_too_large_to_plan_is_refused() {
        let ctx = checked_ctx();
        let rows = |n: usize| {
            let mut sql = b"INSERT INTO g$f (K, Q, T, V) VALUES (?, ?, ?, ?)".to_vec();
            for _ in 1..n {
                sql.extend_from_slice(b", (?, ?, ?, ?)");
            }
            sql
        };
        let big = decide(&rows(16_385), Origin::Prepare, &ctx).1;
        assert_eq!(
            refusal_of(&big).and_then(Refusal::rule),
            Some(Rule::C9),
            "{big:?}"
        );
        let small = decide(&rows(16_384), Origin::Prepare, &ctx).1;
        assert!(matches!(&small, Decision::Send(w) if w.refused.is_none() && w.plan.is_some()));
    }

    #[test]
    fn dollar_names_are_table_names_anywhere_in_a_statement() {
        let names = |sql: &str| -> Vec<(Option<String>, String)> {
            dollar_names(sql.as_bytes(), Dialect::default())
                .into_iter()
                .map(|t| (t.schema, t.name.into()))
                .collect()
        };
        assert_eq!(
            names("UPDATE db.`g$f` a JOIN `x$y`.t ON g$f.K = 1 SET a.V = 'a$b'"),
            vec![(Some("db".to_string()), "g$f".to_string())]
        );
        // past any token count a reader keeps
        let long = format!(
            "WITH c AS (SELECT {}1) UPDATE h$f SET K = 'x'",
            "1+".repeat(5000)
        );
        assert_eq!(names(&long), vec![(None, "h$f".to_string())]);
        assert!(names("").is_empty() && names("SELECT 1").is_empty());
        assert_eq!(names("g$f"), vec![(None, "g$f".to_string())]);
    }

    /// DDL the parser does not read is refused when it may name an HBase table as a table,
    /// not for a `$` in a column's or an index's name (found by a review).
    #[test]
    fn unread_ddl_is_refused_only_for_an_hbase_table_name() {
        let ctx = checked_ctx();
        let d = |sql: &str| decide(sql.as_bytes(), Origin::Text, &ctx).1;
        for sql in [
            "DROP INDEX `i$1` ON plain",
            "CREATE OR REPLACE TABLE p11 (`c$1` int)",
            "CREATE TEMPORARY TABLE tmp2 (`c$1` int, KEY `k$1` (`c$1`))",
        ] {
            assert_eq!(refusal_of(&d(sql)), None, "{sql}: {:?}", d(sql));
        }
        for sql in [
            "DROP INDEX i ON g$f",
            "DROP INDEX i ON db.`g$f`",
            "CREATE OR REPLACE TABLE g$f (K varbinary(1024))",
        ] {
            assert!(refusal_of(&d(sql)).is_some(), "{sql}: {:?}", d(sql));
        }
    }

    #[test]
    fn views_over_hbase_tables_must_be_read_only() {
        let ctx = checked_ctx();
        let d = |sql: &str| refusal_of(&decide(sql.as_bytes(), Origin::Text, &ctx).1).cloned();
        for sql in [
            "CREATE VIEW v AS SELECT * FROM g$f",
            "CREATE OR REPLACE ALGORITHM = TEMPTABLE VIEW v AS SELECT K, V FROM hb.`g$f` WHERE K > 'a'",
            "ALTER DEFINER = CURRENT_USER VIEW v AS SELECT a.* FROM g$f a JOIN o ON 1",
            "SELECT 1; CREATE VIEW v AS SELECT * FROM g$f",
            "SET STATEMENT a=1 FOR CREATE VIEW v AS SELECT * FROM g$f",
        ] {
            assert_eq!(
                d(sql),
                Some(Refusal::Unchecked(Unchecked::UpdatableView)),
                "{sql}"
            );
        }
        for sql in [
            "CREATE VIEW v AS SELECT K, COUNT(*) AS n FROM g$f GROUP BY K",
            "CREATE VIEW v AS SELECT DISTINCT K FROM g$f",
            // `$` names that are not HBase tables
            "CREATE VIEW v AS SELECT * FROM other$name",
            "CREATE VIEW v AS SELECT * FROM plain",
        ] {
            assert_eq!(d(sql), None, "{sql}");
        }
        // warn mode: not refused
        let lax = Context {
            strict: false,
            ..ctx.clone()
        };
        let sql = b"CREATE VIEW v AS SELECT * FROM g$f";
        assert_eq!(refusal_of(&decide(sql, Origin::Text, &lax).1), None);
    }

    #[test]
    fn statements_run_by_wrappers_are_read_as_they_run() {
        let ctx = checked_ctx();
        let d = |sql: &str| decide(sql.as_bytes(), Origin::Text, &ctx).1;
        // what runs is checked
        for (sql, rule) in [
            (
                "ANALYZE INSERT INTO g$f VALUES ('', 'q', -1, 'v')",
                Rule::C1,
            ),
            (
                "ANALYZE FORMAT=JSON UPDATE g$f SET T = 1 WHERE K = 'k'",
                Rule::C7,
            ),
            (
                "SET STATEMENT sql_mode='' FOR REPLACE g$f VALUES ('k', 'q', 5, 'v')",
                Rule::C4,
            ),
            (
                "SET STATEMENT a=1 FOR ANALYZE UPDATE g$f SET K = 'x'",
                Rule::C7,
            ),
            (
                "EXPLAIN ANALYZE UPDATE g$f SET Q = 'x' WHERE K = 'k'",
                Rule::C7,
            ),
        ] {
            assert_eq!(
                refusal_of(&d(sql)).and_then(Refusal::rule),
                Some(rule),
                "{sql}"
            );
        }
        // EXPLAIN runs nothing
        assert_eq!(
            refusal_of(&d("EXPLAIN UPDATE g$f SET T = 1 WHERE K = 'k'")),
            None
        );
        // a prepared ANALYZE: the variant's predicate goes where the WHERE clause ends in the
        // whole text, and a text's rewrite is spliced there too
        let sql = b"ANALYZE SELECT * FROM g$f WHERE K LIKE ? ORDER BY K";
        let Decision::Send(Outbound {
            scan: Some(plan), ..
        }) = decide(sql, Origin::Prepare, &ctx).1
        else {
            panic!("not planned");
        };
        assert_eq!(
            &sql[..plan.where_end],
            b"ANALYZE SELECT * FROM g$f WHERE K LIKE ?"
        );
        assert_eq!(
            d("ANALYZE SELECT * FROM g$f WHERE K LIKE 'abcdef%'"),
            Decision::rewrite(
                b"ANALYZE SELECT * FROM g$f WHERE K LIKE 'abcdef%' AND `K_PREFIX` = X'61626364'"
                    .to_vec()
            )
        );
        // HBase DDL only as a statement of its own
        for sql in [
            "SET STATEMENT max_statement_time=0 FOR CREATE TABLE g$f (a int)",
            "SET STATEMENT a=1, b=(2) FOR DROP TABLE g$f",
            "set statement x=1 for CREATE TABLEGROUP g",
        ] {
            assert!(
                refused!(&d(sql), Refusal::DdlNotAlone(Alone::UnderSetStatement)),
                "{sql}: {:?}",
                d(sql)
            );
        }
        // a placeholder in the settings: the write under it is not read on its own
        assert!(refused!(
            &d("SET STATEMENT max_statement_time=? FOR DELETE FROM g$f WHERE K = 'k'"),
            Refusal::Unreadable(Unreadable::Wrapped)
        ));
        // reads under an unsure wrapper, and wrappers of plain statements, are forwarded
        for sql in [
            "SET STATEMENT max_statement_time=? FOR SELECT * FROM g$f",
            "SET STATEMENT max_statement_time=0 FOR SELECT 1",
            "ANALYZE TABLE g$f",
            "ANALYZE SELECT * FROM plain",
        ] {
            assert_eq!(d(sql), Decision::forward(), "{sql}");
        }
    }

    #[test]
    fn dollars_in_literals_and_non_table_ddl_are_not_hbase() {
        for sql in [
            "CREATE TABLE t9 AS SELECT json_value('{\"a\":1}','$.a') x",
            "CREATE TABLE t (e enum('a$b','c'))",
            "SELECT json_extract(j, '$.x') FROM t",
            "CREATE VIEW v AS SELECT * FROM g$f",
            "DROP VIEW v$x",
        ] {
            assert_eq!(text(sql), Decision::forward(), "{sql}");
        }
        // HBase names in forms the reader does not parse are refused, not forwarded
        assert!(refused!(
            &maria("CREATE OR REPLACE TABLE g$f (K int)"),
            Refusal::Unreadable(Unreadable::HbaseDdl(Some(_)))
        ));
        assert!(refused!(
            &maria("ALTER ONLINE TABLE g$f ADD COLUMN X int"),
            Refusal::Unreadable(Unreadable::HbaseDdl(Some(_)))
        ));
    }

    #[test]
    fn hbase_rules_can_be_limited_to_some_databases() {
        let scoped = |current: Option<&str>| Context {
            scope: Scope {
                databases: vec!["hb".to_string()].into(),
                current: current.map(str::to_owned),
                names_ci: false,
            },
            ..Context::default()
        };
        let legacy = "CREATE TABLE order$items (id int)";
        // outside the HBase databases a `$` table is an ordinary table
        let d = decide(legacy.as_bytes(), Origin::Text, &scoped(Some("shop"))).1;
        assert_eq!(d, Decision::forward());
        let d = decide(
            b"ALTER TABLE shop.order$items ADD x int",
            Origin::Text,
            &scoped(Some("hb")),
        )
        .1;
        assert_eq!(d, Decision::forward());
        assert_eq!(
            decide(
                b"SELECT 1; DROP TABLE shop.order$items",
                Origin::Text,
                &scoped(Some("hb"))
            )
            .1,
            Decision::forward()
        );
        // inside them the rules apply, qualified or by the current database
        let d = decide(legacy.as_bytes(), Origin::Text, &scoped(Some("hb"))).1;
        assert!(matches!(d, Decision::Ddl(_)), "{d:?}");
        let d = decide(
            b"SELECT 1; DROP TABLE hb.order$items",
            Origin::Text,
            &scoped(Some("shop")),
        )
        .1;
        assert!(refused!(&d, Refusal::DdlNotAlone(Alone::InMultiStatement)));
        // table groups are the instance's, whatever the database
        assert!(matches!(
            decide(b"CREATE TABLEGROUP g", Origin::Text, &scoped(Some("shop"))).1,
            Decision::Ddl(_)
        ));
        // by default every database holds HBase tables
        assert!(matches!(text(legacy), Decision::Ddl(_)));
    }

    #[test]
    fn the_proxys_own_triggers_restore_as_the_proxys_own() {
        let dumped = "/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER `d`.`obkv_g$f_bi` BEFORE INSERT ON `d`.`g$f` FOR EACH ROW SET NEW.`K_PREFIX` = substring(NEW.`K`, 1, 4) \n*/";
        // the session makes sure the proxy's own triggers of the table exist (issue 31)
        assert_eq!(
            maria(dumped),
            Decision::Answer(Answer::ProxyTrigger(TableName::new(Some("d"), "g$f")))
        );
        // any other trigger on an HBase table is the user's: forwarded when the write rules
        // are off (refused with them: `triggers_on_hbase_tables_are_refused`)
        let other = "CREATE TRIGGER mine BEFORE INSERT ON g$f FOR EACH ROW SET @x = 1";
        assert_eq!(text(other), Decision::forward());
        let elsewhere = "CREATE TRIGGER obkv_g$f_bi BEFORE INSERT ON t FOR EACH ROW SET @x = 1";
        assert_eq!(text(elsewhere), Decision::forward());
        assert_eq!(
            text("SHOW PROXY CREATE TABLEGROUPS"),
            Decision::Answer(Answer::TablegroupDdl)
        );
        // mariadb-dump locks the tables first: their catalog entries are read before
        let lock = "LOCK TABLES `g$f` READ /*!32311 LOCAL */,`plain` READ, d.h$f AS x WRITE";
        let want = vec![
            TableName::new(None, "g$f"),
            TableName::new(Some("d"), "h$f"),
        ];
        assert_eq!(
            maria(lock),
            Decision::Send(Outbound {
                read_catalog: want,
                ..Outbound::default()
            })
        );
        assert_eq!(text("LOCK TABLES plain WRITE"), Decision::forward());
    }

    #[test]
    fn ambiguous_readings_are_refused() {
        let sql = "SELECT \"a\\\"; ALTER TABLE g$f ADD COLUMN X int -- \"";
        assert!(
            refused!(&text(sql), Refusal::Unreadable(Unreadable::Ambiguous)),
            "{:?}",
            text(sql)
        );
        let sql = b"SELECT '\xbf\\'; ALTER TABLE g$f ADD COLUMN X int -- '";
        assert!(refused!(
            &decide(sql, Origin::Text, &Context::default()).1,
            Refusal::Unreadable(Unreadable::Ambiguous)
        ));
        // a backquote after a byte >= 0x80 is a second byte under gbk, big5 or sjis: what
        // reads as one SELECT in UTF-8 is a SELECT and an ALTER there
        assert!(refused!(
            &decide(
                b"SELECT \x81`; ALTER TABLE g$f ADD COLUMN X int; #`",
                Origin::Text,
                &Context::default()
            )
            .1,
            Refusal::Unreadable(Unreadable::Ambiguous)
        ));
        // in a name: the UTF-8 reading sees the ALTER and refuses the text by itself
        assert!(refused!(
            &decide(
                b"SELECT `a\x81`; ALTER TABLE g$f ADD COLUMN X int; #`",
                Origin::Text,
                &Context::default()
            )
            .1,
            Refusal::DdlNotAlone(_)
        ));
        // unambiguous texts with backslashes are read normally
        assert_eq!(text("SELECT 'a\\'b', \"x\" FROM g$f"), Decision::forward());
    }

    #[test]
    fn prepare_rewrites_literals_and_plans_placeholders() {
        let ctx = Context {
            tables: Some(crate::engine::prefix_scan::tests::view()),
            ..Context::default()
        };
        let d = decide(
            b"SELECT * FROM g$f WHERE K LIKE 'abcd%' AND T > ?",
            Origin::Prepare,
            &ctx,
        )
        .1;
        assert_eq!(
            d,
            Decision::rewrite(
                b"SELECT * FROM g$f WHERE K LIKE 'abcd%' AND T > ? AND `K_PREFIX` = X'61626364'"
                    .to_vec()
            )
        );
        let d = decide(b"SELECT * FROM g$f WHERE K LIKE ?", Origin::Prepare, &ctx).1;
        assert!(matches!(&d, Decision::Send(w) if w.scan.is_some()), "{d:?}");
        // the same placeholders in a text are not a plan
        let d = decide(b"SELECT * FROM g$f WHERE K LIKE ?", Origin::Text, &ctx).1;
        assert_eq!(d, Decision::forward());
        // EXPLAIN OBKV explains, and is a proxy command
        assert_eq!(
            decide(b"EXPLAIN OBKV SELECT 1", Origin::Text, &ctx).1,
            Decision::Answer(Answer::ExplainObkv)
        );
        let rows = crate::engine::explain::explain_obkv(
            b"SELECT * FROM g$f WHERE K IN ('abcd1', 'wxyz')",
            &ctx,
        )
        .unwrap();
        assert_eq!(rows.len(), 1);
        // OceanBase prunes an equality on K itself: sent unchanged, partitions still shown
        assert_eq!(
            rows[0].sent,
            b"SELECT * FROM g$f WHERE K IN ('abcd1', 'wxyz')".to_vec()
        );
        assert!(rows[0].note.contains("prunes"), "{}", rows[0].note);
        assert_eq!(rows[0].table.as_deref(), Some("`hb`.`g$f`"));
        let p = |k: &[u8]| crate::hbase::partition::key_partition(k, Some(4), 13);
        let mut want = vec![p(b"abcd"), p(b"wxyz")];
        want.sort_unstable();
        want.dedup();
        let want: Vec<String> = want.iter().map(|n| format!("p{n}")).collect();
        assert_eq!(rows[0].partitions.as_deref(), Some(want.join(",").as_str()));
    }

    fn writing(txn: Txn) -> Context {
        Context {
            tables: Some(crate::engine::prefix_scan::tests::view()),
            writes: Some(WriteRules {
                now_ms: 1_763_700_000_000,
                ..WriteRules::default()
            }),
            txn,
            ..Context::default()
        }
    }

    #[test]
    fn a_rename_into_an_hbase_name_is_hbase_ddl() {
        for sql in [
            "ALTER TABLE tmp RENAME TO g$f",
            "ALTER TABLE tmp RENAME AS hb.g$f",
            "RENAME TABLE tmp TO g$f",
        ] {
            assert!(matches!(text(sql), Decision::Ddl(_)), "{sql}");
        }
        assert!(text("ALTER TABLE tmp RENAME TO other").is_forward());
    }

    #[test]
    fn the_proxys_own_triggers_are_not_dropped() {
        for sql in [
            "DROP TRIGGER obkv_g$f_bi",
            "DROP TRIGGER IF EXISTS hb.`obkv_g$f_bu`",
        ] {
            assert!(
                refused!(&text(sql), Refusal::Unchecked(Unchecked::ProxyTrigger)),
                "{sql}"
            );
            let prepared = format!("PREPARE s FROM '{}'", sql.replace('`', ""));
            assert!(
                refused!(
                    &text(&prepared),
                    Refusal::Unchecked(Unchecked::ProxyTrigger)
                ),
                "{prepared}: {:?}",
                text(&prepared)
            );
        }
        assert!(text("DROP TRIGGER mine$bi").is_forward());
        assert!(text("DROP TRIGGER obkv_plain_bi").is_forward());
    }

    #[test]
    fn a_text_that_changes_the_reading_state_is_read_under_every_state() {
        let ctx = Context {
            dialect: Dialect::from_server_version(b"5.5.5-10.11.19-MariaDB"),
            ..checked_ctx()
        };
        let d = |sql: &str| decide(sql.as_bytes(), Origin::Text, &ctx).1;
        // NO_BACKSLASH_ESCAPES set earlier in the text: the backend reads 'abcd\' as a string
        // and stores T = 5; the proxy's usual reading does not end the string
        let smuggle = r"INSERT INTO g$f (K, Q, T, V) VALUES ('abcd\', 'q', 5, 'v')";
        for set in [
            "SET sql_mode = 'NO_BACKSLASH_ESCAPES'",
            "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')",
            "SET @@session.sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES', @x = 1",
            // through a text or a program it runs (found by a review)
            "EXECUTE IMMEDIATE 'SET sql_mode = ''NO_BACKSLASH_ESCAPES'''",
            "PREPARE s FROM 'SET sql_mode = ''NO_BACKSLASH_ESCAPES'''; EXECUTE s",
            "CALL sets_the_mode()",
        ] {
            let got = d(&format!("{set}; {smuggle}"));
            assert!(
                refused!(&got, Refusal::Unreadable(Unreadable::Ambiguous)),
                "{set}: {got:?}"
            );
        }
        // a prefix scan whose prefix depends on the escapes: not rewritten, so the backend's
        // own reading gives the rows
        let scan = r"SET NAMES utf8mb4; SELECT * FROM g$f WHERE K LIKE 'abc\%%'";
        assert!(d(scan).rewritten().is_none(), "{:?}", d(scan));
        // after a change of character set no prefix is rewritten (its bytes are the new
        // set's); the write stage still fills in T
        let plain = "SET NAMES gbk; SELECT * FROM g$f WHERE K LIKE 'abcd%'";
        assert!(d(plain).rewritten().is_none(), "{:?}", d(plain));
        let write = "SET NAMES gbk; INSERT INTO g$f (K, Q, V) VALUES ('abcd1', 'q', 'v')";
        let w = d(write);
        let text = w
            .rewritten()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        assert!(text.contains("T)") && refusal_of(&w).is_none(), "{w:?}");
        // the same statements without the state change, or after SET STATEMENT … FOR (it holds
        // for its own statement): read as usual
        assert!(refusal_of(&d(&format!("SET @a = 1; {smuggle}"))).is_none());
        let scoped = r"SET STATEMENT sql_mode = 'NO_BACKSLASH_ESCAPES' FOR SELECT 1; SELECT * FROM g$f WHERE K LIKE 'abc\%%'";
        assert!(d(scoped).rewritten().is_some(), "{:?}", d(scoped));
    }

    /// A text that repeats a kept one but for its literal's body (`sql::repeat`: its reading
    /// taken from the kept one's) is decided as the same text read in full, on both backends'
    /// placements and readings, with the same activity for the metrics and the advisor.
    #[test]
    fn a_text_repeating_a_kept_one_is_decided_as_in_full() {
        crate::sql::scan::keep_shapes_on_this_thread();
        let contexts = [
            checked_ctx(),
            Context {
                dialect: Dialect::from_server_version(b"5.5.5-10.11.19-MariaDB"),
                tables: Some(crate::engine::prefix_scan::tests::view_placed(
                    crate::hbase::schema::Placement::MySqlFamily,
                )),
                ..checked_ctx()
            },
            Context {
                rewrite: false,
                txn: Txn {
                    active: true,
                    pinned: None,
                },
                ..checked_ctx()
            },
        ];
        let forms = [
            ("SELECT K, Q, T, V FROM g$f WHERE K LIKE '", "'"),
            ("SELECT * FROM hb.g$f WHERE K = '", "' LIMIT 10"),
            ("select * from g$f t where t.K >= '", "' order by K"),
            ("DELETE FROM g$f WHERE K = '", "'"),
            ("SELECT * FROM g$f WHERE LEFT(K, 4) = '", "' FOR UPDATE"),
            ("UPDATE g$f SET T = 5 WHERE K LIKE '", "'"),
            ("SELECT * FROM other.g$f WHERE K LIKE '", "'"),
        ];
        let bodies = [
            "abcd%", "ab%", "abcdefg%", "%x", "abcd", "", "a_c%", "wxyz12%",
        ];
        let run = |ctx: &Context, sql: &str| {
            let mut activity = Activity::default();
            let sql = sql.as_bytes();
            let d = decide_observed(sql, classify(sql), Origin::Text, ctx, &mut activity);
            (format!("{d:?}"), format!("{activity:?}"))
        };
        let mut hits = 0;
        for ctx in &contexts {
            for (head, tail) in forms {
                for old in bodies {
                    for new in bodies {
                        let (o, n) = (format!("{head}{old}{tail}"), format!("{head}{new}{tail}"));
                        crate::sql::repeat::forget();
                        let full = run(ctx, &n);
                        crate::sql::repeat::forget();
                        let _ = run(ctx, &o);
                        let lent = crate::sql::repeat::lent_count();
                        assert_eq!(run(ctx, &n), full, "{o:?} then {n:?}");
                        hits += usize::from(crate::sql::repeat::lent_count() > lent);
                    }
                }
            }
        }
        // every form in every context was read from the kept text (one outside the scope's
        // database too: its reading is lent, then the scope sends it down the full path)
        assert_eq!(
            hits,
            contexts.len() * forms.len() * bodies.len() * bodies.len()
        );
    }

    /// A text not rewritten after all (its readings disagree on the prefix, or it changes the
    /// character set first) leaves no rewrite in the activity the session counts; the same
    /// scan on its own does, and shows the advisor its scan.
    #[test]
    fn a_text_not_rewritten_after_all_counts_no_rewrite() {
        let ctx = Context {
            dialect: Dialect::from_server_version(b"5.5.5-10.11.19-MariaDB"),
            ..checked_ctx()
        };
        let run = |sql: &str| {
            let mut activity = Activity::default();
            let sql = sql.as_bytes();
            let d = decide_observed(sql, classify(sql), Origin::Text, &ctx, &mut activity);
            (d, activity)
        };
        let rewrites = |a: &Activity| {
            a.tables
                .iter()
                .filter(|(_, u)| *u == TableUse::Rewrite)
                .count()
        };
        let (d, a) = run("SELECT * FROM g$f WHERE K LIKE 'abcd%'");
        assert!(d.rewritten().is_some(), "{d:?}");
        assert_eq!(rewrites(&a), 1, "{a:?}");
        assert!(
            matches!(
                a.observed.as_slice(),
                [Observation {
                    what: Observed::Scan { len: 4, .. },
                    ..
                }]
            ),
            "{a:?}"
        );
        for sql in [
            r"SET NAMES utf8mb4; SELECT * FROM g$f WHERE K LIKE 'abc\%%'",
            "SET NAMES gbk; SELECT * FROM g$f WHERE K LIKE 'abcd%'",
        ] {
            let (d, a) = run(sql);
            assert!(d.rewritten().is_none(), "{sql}: {d:?}");
            assert_eq!(rewrites(&a), 0, "{sql}: {a:?}");
        }
    }

    #[test]
    fn triggers_on_hbase_tables_are_refused() {
        let ctx = checked_ctx();
        for sql in [
            "CREATE TRIGGER t BEFORE INSERT ON g$f FOR EACH ROW SET NEW.T = 5",
            "CREATE DEFINER = CURRENT_USER TRIGGER IF NOT EXISTS t AFTER UPDATE ON hb.`g$f` FOR EACH ROW INSERT INTO plain VALUES (1)",
            "CREATE OR REPLACE TRIGGER t BEFORE INSERT ON g$f FOR EACH ROW BEGIN SET NEW.K = 'x'; END",
        ] {
            let d = decide(sql.as_bytes(), Origin::Text, &ctx).1;
            assert!(
                refused!(&d, Refusal::Unchecked(Unchecked::TriggerOnHbase)),
                "{sql}: {d:?}"
            );
        }
        // on a plain table, or a trigger that only reads an HBase table: not this rule's
        for sql in [
            "CREATE TRIGGER t BEFORE INSERT ON plain FOR EACH ROW SET NEW.a = 5",
            "CREATE TRIGGER t BEFORE INSERT ON plain FOR EACH ROW SET NEW.a = (SELECT COUNT(*) FROM g$f)",
        ] {
            let d = decide(sql.as_bytes(), Origin::Text, &ctx).1;
            assert!(refusal_of(&d).is_none(), "{sql}: {d:?}");
        }
        // warn mode: forwarded
        let lax = Context {
            strict: false,
            ..ctx
        };
        let d = decide(
            b"CREATE TRIGGER t BEFORE INSERT ON g$f FOR EACH ROW SET NEW.T = 5",
            Origin::Text,
            &lax,
        )
        .1;
        assert!(refusal_of(&d).is_none(), "{d:?}");
    }

    #[test]
    fn a_locking_read_inside_another_statement_is_guarded() {
        let txn = Txn {
            active: true,
            pinned: None,
        };
        for sql in [
            "SET @x = (SELECT V FROM g$f WHERE K = 'abcd1' FOR UPDATE)",
            "DO (SELECT 1 FROM g$f WHERE K = 'abcd1' LOCK IN SHARE MODE)",
            "INSERT INTO plain SELECT K, V FROM g$f WHERE K = 'abcd1' FOR UPDATE",
            "UPDATE plain SET a = (SELECT V FROM g$f WHERE K = 'abcd1' FOR SHARE)",
        ] {
            assert_eq!(refusal(sql, txn.clone()).rule, Rule::X2, "{sql}");
            // outside a transaction nothing is held: forwarded
            let d = decide(sql.as_bytes(), Origin::Text, &writing(Txn::default())).1;
            assert!(refusal_of(&d).is_none(), "{sql}: {d:?}");
        }
        // no lock, or no HBase table: forwarded in the transaction too
        for sql in [
            "SET @x = (SELECT V FROM g$f WHERE K = 'abcd1')",
            "SET @x = (SELECT a FROM plain FOR UPDATE)",
            "INSERT INTO plain SELECT a FROM other FOR UPDATE",
        ] {
            let d = decide(sql.as_bytes(), Origin::Text, &writing(txn.clone())).1;
            assert!(refusal_of(&d).is_none(), "{sql}: {d:?}");
        }
    }

    fn write_decision(sql: &str, txn: Txn) -> Outbound {
        match decide(sql.as_bytes(), Origin::Text, &writing(txn)).1 {
            Decision::Send(w) => w,
            other => panic!("{sql}: {other:?}"),
        }
    }

    /// The rule's finding a text is refused with.
    fn refusal(sql: &str, txn: Txn) -> crate::hbase::rules::Finding {
        match decide(sql.as_bytes(), Origin::Text, &writing(txn)).1 {
            Decision::Answer(Answer::Refuse(Refusal::Rule(f))) => f,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn writes_pass_the_write_stage() {
        let w = write_decision(
            "INSERT INTO g$f (K, Q, V) VALUES ('abcd1', 'q', 'v')",
            Txn::default(),
        );
        assert_eq!(
            w.text.as_deref(),
            Some(
                b"INSERT INTO g$f (K, Q, V, T) VALUES ('abcd1', 'q', 'v', -1763700000000)"
                    .as_slice()
            )
        );
        assert_eq!(w.refused, None);
        let e = refusal(
            "INSERT INTO g$f (K, Q, T, V) VALUES ('', 'q', -1763700000000, 'v')",
            Txn::default(),
        );
        assert_eq!(e.code, crate::hbase::cells::ER_WRONG_VALUE);
        assert_eq!(e.rule, Rule::C1, "{}", e.message);
        // a plain table and a plain SELECT are not the write stage's business
        assert_eq!(
            decide(
                b"INSERT INTO plain (K) VALUES ('')",
                Origin::Text,
                &writing(Txn::default())
            )
            .1,
            Decision::forward()
        );
        // an UPDATE that moves a cell
        let e = refusal("UPDATE g$f SET K = 'x' WHERE K = 'abcd1'", Txn::default());
        assert_eq!(e.rule, Rule::C7, "{}", e.message);
    }

    #[test]
    fn a_refused_statement_ends_a_multi_statement_text() {
        let sql = "INSERT INTO g$f (K, Q, T, V) VALUES ('abcd1', 'q', -1763700000000, 'v'); \
                   INSERT INTO g$f (K, Q, T, V) VALUES ('abcd2', 'q', 1763700000000, 'v'); \
                   DELETE FROM plain";
        let w = write_decision(sql, Txn::default());
        assert_eq!(
            w.text.as_deref(),
            Some(
                b"INSERT INTO g$f (K, Q, T, V) VALUES ('abcd1', 'q', -1763700000000, 'v')"
                    .as_slice()
            )
        );
        let e = w.refused.expect("refused");
        assert_eq!(e.rule(), Some(Rule::C4), "{e:?}");
    }

    #[test]
    fn the_guard_in_a_text() {
        let v = crate::engine::prefix_scan::tests::view();
        let schema = prefix_scan::table_named(
            &TableName {
                schema: None,
                name: "g$f".into(),
                raw_schema: None,
                raw_name: b"g$f"[..].into(),
            },
            &v,
        )
        .unwrap()
        .unwrap();
        // two keys in different partitions
        let a = b"aaaa1".as_slice();
        let b = (0u8..=255)
            .map(|c| vec![b'b', c, b'z', b'z', b'1'])
            .find(|k| schema.partitioning.partition_of(k) != schema.partitioning.partition_of(a))
            .expect("another partition");
        let hex: String = b.iter().map(|c| format!("{c:02X}")).collect();
        let sql = format!(
            "BEGIN; INSERT INTO g$f (K, Q, V) VALUES ('aaaa1', 'q', 'v'); DELETE FROM g$f WHERE K = X'{hex}'; COMMIT"
        );
        let w = write_decision(&sql, Txn::default());
        let e = w.refused.expect("the second partition is refused");
        assert_eq!(e.rule(), Some(Rule::X1), "{e:?}");
        let sent = String::from_utf8(w.text.unwrap()).unwrap();
        assert!(
            sent.starts_with("BEGIN; INSERT INTO g$f (K, Q, V, T) VALUES ('aaaa1'"),
            "{sent}"
        );
        assert!(!sent.contains("DELETE"), "{sent}");
        // the pin the session keeps: the first write's partition
        let pin = *w.txn_after.flatten().expect("pinned");
        assert_eq!(Some(pin.partition), schema.partitioning.partition_of(a));
        // a session already in that partition may go on there, not elsewhere
        let txn = Txn {
            active: true,
            pinned: Some(pin),
        };
        let ok = decide(
            b"DELETE FROM g$f WHERE K = 'aaaa2'",
            Origin::Text,
            &writing(txn.clone()),
        )
        .1;
        assert!(
            matches!(ok, Decision::Send(ref w) if w.refused.is_none()),
            "{ok:?}"
        );
        let e = refusal("DELETE FROM g$f WHERE V = 'x'", txn);
        assert_eq!(e.rule, Rule::X2, "{}", e.message);
        // a text that turns autocommit off or starts an XA transaction: the statements after
        // it are one transaction (issue 31)
        let two = format!(
            "INSERT INTO g$f (K, Q, V) VALUES ('aaaa1', 'q', 'v'); DELETE FROM g$f WHERE K = X'{hex}'"
        );
        for begin in [
            "SET autocommit = 0",
            "SET @@session.autocommit=OFF",
            "SET SESSION autocommit := 0, @a = 1",
            "XA START 'x'",
        ] {
            let w = write_decision(&format!("{begin}; {two}"), Txn::default());
            let e = w.refused.expect("the second partition is refused");
            assert_eq!(e.rule(), Some(Rule::X1), "{begin}: {e:?}");
        }
        // autocommit on (it commits) or an XA transaction ended: each statement its own
        for end in ["SET autocommit = 1", "XA COMMIT 'x' ONE PHASE"] {
            let txn = Txn {
                active: true,
                pinned: None,
            };
            let w = write_decision(&format!("{end}; {two}"), txn);
            assert!(w.refused.is_none(), "{end}: {w:?}");
        }
        // SET STATEMENT … FOR changes nothing after it
        let w = write_decision(
            &format!("SET STATEMENT autocommit=0 FOR SELECT 1; {two}"),
            Txn::default(),
        );
        assert!(w.refused.is_none(), "{w:?}");
    }

    #[test]
    fn writes_the_reader_does_not_follow_are_placed_nowhere_in_a_transaction() {
        let txn = Txn {
            active: true,
            pinned: None,
        };
        for sql in [
            "UPDATE g$f SET V = 'x' WHERE K IN (SELECT k FROM plain)",
            "DELETE g$f FROM g$f JOIN plain ON g$f.K = plain.k",
            "SELECT * FROM g$f WHERE K IN (SELECT k FROM plain) FOR UPDATE",
        ] {
            let e = refusal(sql, txn.clone());
            assert_eq!(e.rule, Rule::X2, "{sql}: {}", e.message);
            // outside a transaction: forwarded
            let d = decide(sql.as_bytes(), Origin::Text, &writing(Txn::default())).1;
            assert!(!matches!(d, Decision::Answer(_)), "{sql}: {d:?}");
        }
        // a plain read the reader does not follow is not a write
        let d = decide(
            b"SELECT * FROM g$f WHERE K IN (SELECT k FROM plain)",
            Origin::Text,
            &writing(txn),
        )
        .1;
        assert!(!matches!(d, Decision::Answer(_)), "{d:?}");
    }

    #[test]
    fn load_data_is_planned_or_unseen() {
        let w = write_decision(
            "LOAD DATA LOCAL INFILE 'f.tsv' INTO TABLE g$f (K, Q, V)",
            Txn::default(),
        );
        assert!(w.load.is_some());
        assert_eq!(
            w.text.as_deref(),
            Some(
                b"LOAD DATA LOCAL INFILE 'f.tsv' INTO TABLE g$f (K, Q, V) SET T = -1763700000000"
                    .as_slice()
            )
        );
        let txn = Txn {
            active: true,
            pinned: None,
        };
        let e = refusal("LOAD DATA INFILE '/srv/f.tsv' INTO TABLE g$f", txn);
        assert_eq!(e.rule, Rule::X2, "{}", e.message);
        let w = write_decision(
            "LOAD DATA INFILE '/srv/f.tsv' INTO TABLE g$f",
            Txn::default(),
        );
        assert!(w.load.is_none());
        assert!(
            w.notes.iter().any(|n| n.message.contains("not checked")),
            "{:?}",
            w.notes
        );
        // a plain table is not the write stage's business
        assert_eq!(
            decide(
                b"LOAD DATA LOCAL INFILE 'f' INTO TABLE plain",
                Origin::Text,
                &writing(Txn::default())
            )
            .1,
            Decision::forward()
        );
    }
}
