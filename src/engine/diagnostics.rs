//! The diagnostics area after a statement the proxy answered or annotated: what `SHOW
//! WARNINGS`, `SHOW ERRORS`, `SHOW COUNT(*) …`, `@@warning_count`, `@@error_count` and `GET
//! DIAGNOSTICS` must show then, as a database shows its own conditions.
//!
//! Two mechanisms, chosen so that the backend's own answers stay byte-exact and plain traffic
//! pays nothing:
//! - **A refusal is raised by the backend itself.** Instead of writing an ERR, the session sends
//!   `SIGNAL SQLSTATE … SET MYSQL_ERRNO = …, MESSAGE_TEXT = …` (`signal`) on the client's own
//!   connection and relays the backend's ERR: the diagnostics area, `@@error_count`, `GET
//!   DIAGNOSTICS` and the next statement's clearing are then the backend's own, whatever the
//!   client asks next. A SIGNAL changes nothing in the database (no row, no transaction state:
//!   measured on MariaDB 10.11 and seekdb inside a transaction).
//! - **What the backend cannot hold, the proxy holds** (`Held`): the proxy's notes and warnings
//!   on a forwarded statement (no statement raises a Note with a chosen code), a message longer
//!   than the backend's SIGNAL takes (MariaDB 512 characters, OceanBase and MySQL 128), the
//!   conditions of HBase DDL the proxy carried out in several statements, and the empty area
//!   after the proxy's own result sets. The next diagnostics statement is answered from it
//!   (`plan`) — the proxy's conditions first (they arose when the statement was checked, before
//!   it ran), then the backend's, still read from the backend's own area — and any other
//!   statement drops it as the backend would clear its area (`kept_after`).

use crate::hbase::rules::Level;
use crate::protocol::packets::ErrorInfo;
use crate::sql::diagnostics::{ConditionItem, Counter, Get, Limit, Statement, StatementItem};
use crate::sql::scan::Flavor;
use crate::sql::splice::Splice;

/// One condition of the diagnostics area.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub level: Level,
    pub code: u16,
    pub sqlstate: [u8; 5],
    /// As the client reads it (the proxy's messages are UTF-8).
    pub message: Vec<u8>,
}

impl Condition {
    pub fn new(level: Level, code: u16, sqlstate: &str, message: impl Into<Vec<u8>>) -> Self {
        let mut state = *b"HY000";
        if let Some(s) = sqlstate.as_bytes().get(..5) {
            state.copy_from_slice(s);
        }
        Condition {
            level,
            code,
            sqlstate: state,
            message: message.into(),
        }
    }

    pub fn error(e: &ErrorInfo) -> Self {
        Condition {
            level: Level::Error,
            code: e.code,
            sqlstate: e.sqlstate,
            message: e.message.clone().into_bytes(),
        }
    }

    /// The row SHOW WARNINGS lists it as: Level, Code, Message.
    pub fn row(&self) -> [Vec<u8>; 3] {
        [
            self.level.name().as_bytes().to_vec(),
            self.code.to_string().into_bytes(),
            self.message.clone(),
        ]
    }
}

/// The conditions the proxy holds for the session's last statement.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    /// The proxy's conditions (and the backend's it had to read before running statements of
    /// its own), listed first.
    pub own: Vec<Condition>,
    /// The backend's own conditions of the statement, still in the backend's diagnostics area:
    /// how many its response counted. None: nothing in the backend's area belongs to the
    /// statement (the proxy answered it, or its own statements ran after it).
    pub backend: Option<u16>,
    /// All of them the backend's, read from it before the connection went to another session
    /// (multiplexing): no sign that the proxy answered or cut the statement short.
    pub carried: bool,
}

impl Held {
    /// The proxy's notes on a statement the backend ran, which counted `backend` conditions.
    pub fn annotated(own: Vec<Condition>, backend: u16) -> Held {
        Held {
            own,
            backend: Some(backend),
            carried: false,
        }
    }

    /// Conditions the proxy holds alone (nothing of the backend's area belongs to them); empty
    /// after a result the proxy made itself, as after a database's own SHOW.
    pub fn alone(own: Vec<Condition>) -> Held {
        Held {
            own,
            backend: None,
            carried: false,
        }
    }

    /// `@@warning_count`: every condition, errors included (as MariaDB counts).
    pub fn warnings(&self) -> u64 {
        self.own.len() as u64 + u64::from(self.backend.unwrap_or(0))
    }

    /// `@@error_count`: the backend's part never holds an error (a statement that failed
    /// takes nothing of the proxy's: its error is the answer).
    pub fn errors(&self) -> u64 {
        self.own.iter().filter(|c| c.level == Level::Error).count() as u64
    }
}

/// How a backend treats its diagnostics area, by its family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Area {
    /// Every statement but SHOW WARNINGS / ERRORS / COUNT and GET DIAGNOSTICS clears it, a
    /// `SELECT @@warning_count` and a `SET @x` too (OceanBase, measured on seekdb 1.4, where
    /// `@@warning_count` and `@@error_count` always read 0). Else MariaDB's rule: only a
    /// statement that uses tables or raises a condition clears it.
    pub clears_always: bool,
    /// The longest MESSAGE_TEXT its SIGNAL keeps (MariaDB 512 characters, refusing more with
    /// 1648; seekdb cuts at 128 bytes, inside a character if it must; MySQL 128 characters).
    pub signal_max: usize,
    /// `signal_max` counts bytes, not characters.
    pub signal_bytes: bool,
    /// GET DIAGNOSTICS of a SIGNAL's condition: NULL (OceanBase) or '' (MariaDB) for the
    /// items a SIGNAL does not set, and the origin OceanBase reports ('ISO 9075').
    pub oceanbase_items: bool,
}

impl Area {
    pub fn of(flavor: Flavor) -> Area {
        match flavor {
            Flavor::MariaDb => Area {
                clears_always: false,
                signal_max: 512,
                signal_bytes: false,
                oceanbase_items: false,
            },
            Flavor::MySql => Area {
                clears_always: false,
                signal_max: 128,
                signal_bytes: false,
                oceanbase_items: false,
            },
            Flavor::OceanBase | Flavor::MySqlOrOceanBase => Area {
                clears_always: true,
                signal_max: 128,
                signal_bytes: true,
                oceanbase_items: true,
            },
        }
    }
}

/// The longest message an ERR packet of the backends carries whole (MariaDB cuts it at
/// MYSQL_ERRMSG_SIZE - 1 bytes; SHOW WARNINGS still lists it whole): a longer one reaches the
/// client in the proxy's own ERR.
pub const ERR_MESSAGE_BYTES: usize = 511;

/// The SIGNAL that makes the backend raise `e` itself, and whether its message had to be cut to
/// what the backend's SIGNAL keeps (then the client gets the proxy's ERR with the whole message,
/// and the proxy holds the condition). None when SIGNAL cannot raise it as an error (SQLSTATE
/// class 00, 01 or 02, or not five letters and digits).
pub fn signal(e: &ErrorInfo, area: Area) -> Option<(Vec<u8>, bool)> {
    let state = &e.sqlstate;
    if !state
        .iter()
        .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
        || state.starts_with(b"00")
        || state.starts_with(b"01")
        || state.starts_with(b"02")
        || e.code == 0
    {
        return None;
    }
    let m = e.message.as_str();
    let end = if area.signal_bytes {
        // the longest whole-character prefix within the limit
        let mut at = m.len().min(area.signal_max);
        while !m.is_char_boundary(at) {
            at -= 1;
        }
        at
    } else {
        m.char_indices()
            .nth(area.signal_max)
            .map_or(m.len(), |(at, _)| at)
    };
    let (message, cut) = (m.get(..end).unwrap_or_default(), end < m.len());
    let mut sql = Vec::with_capacity(80 + 2 * message.len());
    sql.extend_from_slice(b"SIGNAL SQLSTATE '");
    sql.extend_from_slice(state);
    sql.extend_from_slice(b"' SET MYSQL_ERRNO = ");
    sql.extend_from_slice(e.code.to_string().as_bytes());
    sql.extend_from_slice(b", MESSAGE_TEXT = ");
    push_hex(&mut sql, message.as_bytes());
    Some((sql, cut))
}

/// `X'…'`: bytes as a literal every backend and sql_mode reads the same way (an empty one is
/// `''`).
fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.is_empty() {
        out.extend_from_slice(b"''");
        return;
    }
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.extend_from_slice(b"X'");
    for b in bytes {
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 15)]);
    }
    out.push(b'\'');
}

/// A string value in a SET: the bytes as utf8mb4.
fn push_string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(b"CONVERT(");
    push_hex(out, bytes);
    out.extend_from_slice(b" USING utf8mb4)");
}

/// What to do with a statement while the proxy holds conditions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Not a diagnostics statement on this backend: it runs as any other, and the held
    /// conditions stay only if the backend would keep its area (`kept_after`).
    Other,
    /// SHOW WARNINGS / ERRORS: the backend's own SHOW WARNINGS gives the columns (and, when its
    /// conditions belong to the statement, its rows); the rows shown are the held ones, then
    /// the backend's, kept to errors and cut to the limit.
    Show { errors: bool, limit: Option<Limit> },
    /// The text runs on the backend; its one row's columns are replaced by these values.
    Patch(Vec<u64>),
    /// GET DIAGNOSTICS: `capture` first (the backend's rows become held ones, because `set`
    /// would clear its area), then `forward` (the text the backend runs, its condition number
    /// moved past the proxy's), then `set` (the values of the proxy's conditions, as `SET`);
    /// the answer is the first statement's.
    Get {
        capture: bool,
        forward: Option<Vec<u8>>,
        set: Option<Vec<u8>>,
    },
}

/// The plan for `stmt` (read by `sql::diagnostics::read` from `sql`) under `held`.
pub fn plan(held: &Held, stmt: Option<&Statement>, sql: &[u8], area: Area) -> Plan {
    let Some(stmt) = stmt else {
        return Plan::Other;
    };
    match stmt {
        Statement::Show { errors, limit } => Plan::Show {
            errors: *errors,
            limit: *limit,
        },
        Statement::Count { errors } => Plan::Patch(vec![if *errors {
            held.errors()
        } else {
            held.warnings()
        }]),
        // OceanBase: a SELECT clears the area and reads 0 (its own answer stands)
        Statement::Select(_) if area.clears_always => Plan::Other,
        Statement::Select(columns) => Plan::Patch(
            columns
                .iter()
                .map(|c| match c {
                    Counter::Warnings => held.warnings(),
                    Counter::Errors => held.errors(),
                })
                .collect(),
        ),
        Statement::Get(get) => plan_get(held, get, sql, area),
    }
}

fn plan_get(held: &Held, get: &Get, sql: &[u8], area: Area) -> Plan {
    // a SET clears OceanBase's area: the backend's rows are read before it
    let capture =
        |set: &Option<Vec<u8>>| set.is_some() && area.clears_always && held.backend.is_some();
    match get {
        Get::Statement(items) => {
            // the backend assigns ROW_COUNT (and NUMBER, right when nothing is the proxy's)
            let exact = held.own.is_empty() && held.backend.is_some();
            let numbers: Vec<&[u8]> = items
                .iter()
                .filter(|(_, i)| *i == StatementItem::Number)
                .map(|(t, _)| t.as_slice())
                .collect();
            let set = (!exact && !numbers.is_empty()).then(|| {
                let total = held.warnings().to_string();
                let mut s = b"SET ".to_vec();
                for (i, t) in numbers.iter().enumerate() {
                    if i > 0 {
                        s.extend_from_slice(b", ");
                    }
                    s.extend_from_slice(t);
                    s.extend_from_slice(b" = ");
                    s.extend_from_slice(total.as_bytes());
                }
                s
            });
            Plan::Get {
                capture: capture(&set),
                forward: Some(sql.to_vec()),
                set,
            }
        }
        Get::Condition { number, at, items } => {
            let own = held.own.len() as u64;
            match number.checked_sub(1).and_then(|i| usize::try_from(i).ok()) {
                Some(i) if (i as u64) < own => {
                    let c = held.own.get(i);
                    let set = c.map(|c| set_items(c, items, area));
                    Plan::Get {
                        capture: capture(&set),
                        forward: None,
                        set,
                    }
                }
                _ => {
                    // the backend's condition (number - own), or one past every condition
                    // (the backend's own warning 1758 for a number it does not have)
                    let theirs = match held.backend {
                        Some(_) => number.saturating_sub(own).max(1),
                        None => 65_536,
                    };
                    let mut s = Splice::new();
                    s.replace(at.0, at.1, theirs.to_string());
                    Plan::Get {
                        capture: false,
                        forward: Some(s.apply(sql)),
                        set: None,
                    }
                }
            }
        }
    }
}

/// `SET target = value, …` for the items of one of the proxy's conditions, with the values a
/// SIGNAL of it would give on this backend.
fn set_items(c: &Condition, items: &[(Vec<u8>, ConditionItem)], area: Area) -> Vec<u8> {
    let mut s = b"SET ".to_vec();
    for (i, (target, item)) in items.iter().enumerate() {
        if i > 0 {
            s.extend_from_slice(b", ");
        }
        s.extend_from_slice(target);
        s.extend_from_slice(b" = ");
        match item {
            ConditionItem::MysqlErrno => s.extend_from_slice(c.code.to_string().as_bytes()),
            ConditionItem::ReturnedSqlstate => push_string(&mut s, &c.sqlstate),
            ConditionItem::MessageText => push_string(&mut s, &c.message),
            ConditionItem::ClassOrigin | ConditionItem::SubclassOrigin if area.oceanbase_items => {
                push_string(&mut s, b"ISO 9075")
            }
            ConditionItem::ClassOrigin | ConditionItem::SubclassOrigin => {
                s.extend_from_slice(b"''")
            }
            ConditionItem::Other if area.oceanbase_items => s.extend_from_slice(b"NULL"),
            ConditionItem::Other => s.extend_from_slice(b"''"),
        }
    }
    s
}

/// The rows SHOW WARNINGS (`errors`: SHOW ERRORS) lists: the held conditions, then the
/// backend's (`theirs`, Level first, as its SHOW WARNINGS gave them), kept to errors and cut to
/// `limit`. Rows are (level, the row as the client gets it).
pub fn shown<'a, T>(
    own: impl Iterator<Item = (Level, T)> + 'a,
    theirs: impl Iterator<Item = (Level, T)> + 'a,
    errors: bool,
    limit: Option<Limit>,
) -> impl Iterator<Item = T> + 'a {
    let (skip, take) = match limit {
        Some(l) => (
            usize::try_from(l.offset).unwrap_or(usize::MAX),
            usize::try_from(l.count).unwrap_or(usize::MAX),
        ),
        None => (0, usize::MAX),
    };
    own.chain(theirs)
        .filter(move |(level, _)| !errors || *level == Level::Error)
        .skip(skip)
        .take(take)
        .map(|(_, row)| row)
}

/// Whether held conditions stay after a statement that was not a diagnostics statement and ran
/// on the backend (`sql`: its text, when it was a text; `raised`: its response counted an error
/// or a warning): the backend kept its area, so a database would have kept them too.
pub fn kept_after(
    sql: Option<&[u8]>,
    raised: bool,
    area: Area,
    d: crate::sql::scan::Dialect,
) -> bool {
    if area.clears_always || raised {
        return false;
    }
    sql.is_some_and(|s| crate::sql::diagnostics::keeps_diagnostics(s, d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::diagnostics::read;
    use crate::sql::scan::Dialect;

    const MARIADB: Flavor = Flavor::MariaDb;

    fn note(code: u16) -> Condition {
        Condition::new(Level::Note, code, "HY000", format!("note {code}"))
    }

    fn planned(held: &Held, sql: &str, f: Flavor) -> Plan {
        let d = Dialect::default();
        plan(
            held,
            read(sql.as_bytes(), d).as_ref(),
            sql.as_bytes(),
            Area::of(f),
        )
    }

    #[test]
    fn a_signal_raises_the_refusal_with_its_code_state_and_message() {
        let e = ErrorInfo::new(1292, "22007", "OBKV-HBase rule C4: it's 'T'");
        let (sql, cut) = signal(&e, Area::of(MARIADB)).unwrap();
        let text = String::from_utf8(sql).unwrap();
        assert!(!cut);
        assert!(
            text.starts_with("SIGNAL SQLSTATE '22007' SET MYSQL_ERRNO = 1292, MESSAGE_TEXT = X'"),
            "{text}"
        );
        let hex = text.rsplit("X'").next().unwrap().trim_end_matches('\'');
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(bytes, e.message.as_bytes());
        // cut at the backend's length, by characters
        let long = ErrorInfo::new(1235, "42000", "é".repeat(600));
        let (sql, cut) = signal(&long, Area::of(Flavor::OceanBase)).unwrap();
        assert!(cut);
        // (128 bytes on OceanBase: 64 two-byte characters, each written as 4 hex digits)
        assert_eq!(
            sql.len(),
            "SIGNAL SQLSTATE '42000' SET MYSQL_ERRNO = 1235, MESSAGE_TEXT = X''".len() + 64 * 4
        );
        let odd = ErrorInfo::new(1235, "42000", format!("a{}", "é".repeat(100)));
        let (sql, _) = signal(&odd, Area::of(Flavor::OceanBase)).unwrap();
        // 'a' and 63 whole characters: 127 bytes
        assert_eq!(
            sql.len(),
            "SIGNAL SQLSTATE '42000' SET MYSQL_ERRNO = 1235, MESSAGE_TEXT = X''".len() + 127 * 2
        );
        let (_, cut) = signal(&long, Area::of(MARIADB)).unwrap();
        assert!(cut);
        let fits = ErrorInfo::new(1235, "42000", "a".repeat(512));
        assert!(!signal(&fits, Area::of(MARIADB)).unwrap().1);
        // what SIGNAL would not raise as an error stays the proxy's
        for state in ["01000", "02000", "00000", "4200x"] {
            assert_eq!(
                signal(&ErrorInfo::new(1235, state, "x"), Area::of(MARIADB)),
                None,
                "{state}"
            );
        }
    }

    #[test]
    fn counts_add_the_proxys_conditions_to_the_backends() {
        let held = Held::annotated(vec![note(1), note(2)], 3);
        assert_eq!(
            planned(&held, "SHOW COUNT(*) WARNINGS", MARIADB),
            Plan::Patch(vec![5])
        );
        assert_eq!(
            planned(&held, "show count(*) errors;", MARIADB),
            Plan::Patch(vec![0])
        );
        assert_eq!(
            planned(&held, "SELECT @@error_count, @@warning_count w", MARIADB),
            Plan::Patch(vec![0, 5])
        );
        // OceanBase: a SELECT clears its area and reads 0 there; its answer stands
        assert_eq!(
            planned(&held, "SELECT @@warning_count", Flavor::OceanBase),
            Plan::Other
        );
        let refused = Held::alone(vec![Condition::error(&ErrorInfo::new(1235, "42000", "x"))]);
        assert_eq!(
            planned(&refused, "SELECT @@warning_count, @@error_count", MARIADB),
            Plan::Patch(vec![1, 1])
        );
        assert_eq!(planned(&held, "SELECT 1", MARIADB), Plan::Other);
    }

    #[test]
    fn shown_rows_are_the_proxys_then_the_backends_limited() {
        let own = [(Level::Note, "n1"), (Level::Error, "e1")];
        let theirs = [(Level::Warning, "w1"), (Level::Warning, "w2")];
        let all: Vec<_> = shown(own.into_iter(), theirs.into_iter(), false, None).collect();
        assert_eq!(all, ["n1", "e1", "w1", "w2"]);
        let errors: Vec<_> = shown(own.into_iter(), theirs.into_iter(), true, None).collect();
        assert_eq!(errors, ["e1"]);
        let l = Some(Limit {
            offset: 1,
            count: 2,
        });
        let some: Vec<_> = shown(own.into_iter(), theirs.into_iter(), false, l).collect();
        assert_eq!(some, ["e1", "w1"]);
    }

    #[test]
    fn get_diagnostics_reads_the_proxys_conditions_and_moves_past_them() {
        let held = Held::annotated(vec![note(7)], 2);
        // statement information: the backend assigns, NUMBER set to the whole count after
        let p = planned(
            &held,
            "GET DIAGNOSTICS @n = NUMBER, @r = ROW_COUNT",
            MARIADB,
        );
        assert_eq!(
            p,
            Plan::Get {
                capture: false,
                forward: Some(b"GET DIAGNOSTICS @n = NUMBER, @r = ROW_COUNT".to_vec()),
                set: Some(b"SET @n = 3".to_vec()),
            }
        );
        // nothing of the proxy's: the backend's answer alone
        let theirs = Held::annotated(vec![], 2);
        assert!(matches!(
            planned(&theirs, "GET DIAGNOSTICS @n = NUMBER", MARIADB),
            Plan::Get { set: None, .. }
        ));
        // condition 1 is the proxy's: set from it, nothing forwarded
        let p = planned(
            &held,
            "GET DIAGNOSTICS CONDITION 1 @e = MYSQL_ERRNO, @t = TABLE_NAME",
            MARIADB,
        );
        assert_eq!(
            p,
            Plan::Get {
                capture: false,
                forward: None,
                set: Some(b"SET @e = 7, @t = ''".to_vec()),
            }
        );
        // on OceanBase the SET clears the backend's area: its rows are read first
        let p = planned(
            &held,
            "GET DIAGNOSTICS CONDITION 1 @t = TABLE_NAME",
            Flavor::OceanBase,
        );
        assert_eq!(
            p,
            Plan::Get {
                capture: true,
                forward: None,
                set: Some(b"SET @t = NULL".to_vec()),
            }
        );
        // condition 3 is the backend's second
        let p = planned(
            &held,
            "GET DIAGNOSTICS CONDITION 3 @m = MESSAGE_TEXT",
            MARIADB,
        );
        assert_eq!(
            p,
            Plan::Get {
                capture: false,
                forward: Some(b"GET DIAGNOSTICS CONDITION 2 @m = MESSAGE_TEXT".to_vec()),
                set: None,
            }
        );
        // past the proxy's when the backend's area holds nothing of the statement
        let alone = Held::alone(vec![note(1)]);
        let p = planned(
            &alone,
            "GET DIAGNOSTICS CONDITION 2 @m = MESSAGE_TEXT",
            MARIADB,
        );
        assert!(
            matches!(p, Plan::Get { forward: Some(f), .. } if f == b"GET DIAGNOSTICS CONDITION 65536 @m = MESSAGE_TEXT")
        );
    }

    #[test]
    fn held_conditions_follow_the_backends_clearing() {
        let d = Dialect::default();
        let mariadb = Area::of(MARIADB);
        assert!(kept_after(Some(b"SELECT 1"), false, mariadb, d));
        assert!(!kept_after(Some(b"SELECT 1"), true, mariadb, d));
        assert!(!kept_after(Some(b"SELECT a FROM t"), false, mariadb, d));
        assert!(!kept_after(None, false, mariadb, d));
        assert!(!kept_after(
            Some(b"SELECT 1"),
            false,
            Area::of(Flavor::OceanBase),
            d
        ));
    }
}
