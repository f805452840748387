//! What a text does to its session's state, for multiplexing (`backend::lend`): nothing the
//! proxy must know of; assignments of session variables it carries to whichever backend
//! connection serves the session next; or state it cannot carry, which pins the session to its
//! connection (counted by reason).
//!
//! Read as the backend reads it (`scan::Scanner`: executable comments as code, every statement
//! of a multi-statement text). Conservative: what it cannot read pins. Transactions are not
//! its business: the status flags of each response say when one is open.

use super::scan::{Dialect, Flavor, Scanner, Tok, Token};

/// Why a session keeps its backend connection from now on (an index into
/// `backend::lend::PIN_REASONS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Pin {
    UserVariable = 0,
    TemporaryTable = 1,
    Lock = 2,
    PreparedStatement = 3,
    PreviousResult = 4,
    ConnectionId = 5,
    SessionCommand = 6,
    StoredProgram = 7,
    SetNotCarried = 8,
    NoDatabase = 9,
    Unreadable = 10,
    TooManySets = 11,
    /// An execution that opens a cursor (its rows stay on the connection).
    Cursor = 12,
    /// A prepared statement the proxy rewrites (its variants are prepared beside it on one
    /// connection).
    PreparedRewrite = 13,
    /// MariaDB's bulk execution (COM_STMT_BULK_EXECUTE).
    BulkExecute = 14,
}

/// An assignment the proxy carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The variable's lower-case name (`names` for SET NAMES / CHARACTER SET / CHARSET).
    pub key: Vec<u8>,
    /// What follows `SET ` to make it again.
    pub text: Vec<u8>,
    /// `= DEFAULT`: the session's value goes back to the server's.
    pub to_default: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Nothing to carry or pin.
    None,
    /// Session variables set (the proxy records them once the text ran without an error).
    Carry(Vec<Assignment>),
    Pin(Pin),
}

/// Longest text read on the event loop: a longer one pins (`Unreadable`) rather than being
/// looked at there (the router reads such texts off the loop).
pub const MAX_READ: usize = 256 * 1024;

/// Variables whose assignment cannot be made again on another connection as written (one-shot
/// values for the next statement, replication and identity state, the database's character
/// set that USE sets, which variables the server tracks).
const NOT_CARRIED: [&[u8]; 16] = [
    b"warning_count",
    b"error_count",
    b"insert_id",
    b"last_insert_id",
    b"identity",
    b"rand_seed1",
    b"rand_seed2",
    b"pseudo_thread_id",
    b"pseudo_slave_mode",
    b"character_set_database",
    b"collation_database",
    b"session_track_system_variables",
    b"session_track_schema",
    b"session_track_state_change",
    b"session_track_transaction_info",
    b"gtid_next",
];

/// System variables whose reading depends on the previous statement.
const PREVIOUS: [&[u8]; 4] = [
    b"identity",
    b"last_insert_id",
    b"warning_count",
    b"error_count",
];

/// Whether `word`, a statement's first (any case), is one that may carry, pin or hide one
/// (`pins`, `assignments`). (Upper-cased into a buffer as long as the longest, and matched:
/// a switch on the length, then one comparison.)
fn is_first_word(word: &[u8]) -> bool {
    let mut up = [0u8; 10];
    let Some(buf) = up.get_mut(..word.len()) else {
        return false;
    };
    for (b, c) in buf.iter_mut().zip(word) {
        *b = c.to_ascii_uppercase();
    }
    matches!(
        &*buf,
        b"SET"
            | b"LOCK"
            | b"UNLOCK"
            | b"PREPARE"
            | b"EXECUTE"
            | b"DEALLOCATE"
            | b"CALL"
            | b"DECLARE"
            | b"IF"
            | b"CASE"
            | b"LOOP"
            | b"WHILE"
            | b"REPEAT"
            | b"BEGIN"
            | b"XA"
            | b"HANDLER"
            | b"BINLOG"
            | b"GET"
            | b"SHOW"
            | b"FLUSH"
    )
}

/// Words anywhere in a statement that pin (each has an underscore, but TEMPORARY).
const UNDERSCORE_WORDS: [&[u8]; 9] = [
    b"GET_LOCK",
    b"RELEASE_LOCK",
    b"RELEASE_ALL_LOCKS",
    b"IS_USED_LOCK",
    b"IS_FREE_LOCK",
    b"LAST_INSERT_ID",
    b"ROW_COUNT",
    b"FOUND_ROWS",
    b"SQL_CALC_FOUND_ROWS",
];

/// A cheap look that finds most texts change nothing, without lexing them: one statement (no
/// `;`), no comment that could hold code (`/*`), no variable (`@`), a first word that is not
/// one `pins` or `assignments` reads, no word with an underscore that pins (`CONNECTION_ID`
/// among them), no TEMPORARY in a CREATE or DROP. Any of them anywhere, in a literal too, sends the text to the
/// full reading (which is never less careful).
#[doc(hidden)]
pub fn plainly_nothing(sql: &[u8]) -> bool {
    if memchr::memchr3(b';', b'@', b'/', sql).is_some() {
        return false;
    }
    let start = super::classify::skip_noise(sql);
    let end = start
        .iter()
        .position(|c| !c.is_ascii_alphabetic())
        .unwrap_or(start.len());
    let first = start.get(..end).unwrap_or_default();
    if end == 0 || is_first_word(first) {
        return false;
    }
    // each word with an underscore looked at once (linear in the text)
    let word_char = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$' || *c >= 0x80;
    let mut from_here = 0;
    while let Some(at) = sql
        .get(from_here..)
        .and_then(|rest| memchr::memchr(b'_', rest))
        .map(|p| from_here + p)
    {
        let from = sql
            .get(from_here..at)
            .and_then(|b| b.iter().rposition(|c| !word_char(c)))
            .map_or(from_here, |p| from_here + p + 1);
        let to = sql
            .get(at..)
            .and_then(|a| a.iter().position(|c| !word_char(c)))
            .map_or(sql.len(), |p| at + p);
        let word = sql.get(from..to).unwrap_or_default();
        // (held in a longer run of word characters too: `a.00ROW_COUNT()` is read as the
        // number `.00` and then the word)
        if super::classify::contains_ci(word, b"CONNECTION_ID")
            || UNDERSCORE_WORDS
                .iter()
                .any(|w| super::classify::contains_ci(word, w))
        {
            return false;
        }
        from_here = to.max(at + 1);
    }
    // (a temporary table is made or dropped only by a statement that starts CREATE or DROP:
    // in one statement with no executable comment, that is its first word)
    let ddl = first.eq_ignore_ascii_case(b"CREATE") || first.eq_ignore_ascii_case(b"DROP");
    !ddl || !memchr::memchr2_iter(b't', b'T', sql).any(|at| {
        sql.get(at..at + 9)
            .is_some_and(|w| w.eq_ignore_ascii_case(b"TEMPORARY"))
    })
}

/// What `sql` does to the session's state, read as `d` reads it.
pub fn effect(sql: &[u8], d: Dialect) -> Effect {
    // (even the cheap look stays off a huge text on the event loop, as the pre-check does)
    if sql.len() > MAX_READ {
        return Effect::Pin(Pin::Unreadable);
    }
    if plainly_nothing(sql) {
        return Effect::None;
    }
    effect_read(sql, d)
}

/// `effect` without its cheap look: the text lexed whole.
#[doc(hidden)]
pub fn effect_read(sql: &[u8], d: Dialect) -> Effect {
    let mut tokens: Vec<Token> = Vec::new();
    let mut scanner = Scanner::new(sql, d);
    for t in scanner.by_ref() {
        let Ok(t) = t else {
            return Effect::Pin(Pin::Unreadable);
        };
        tokens.push(t);
    }
    // a text that reads otherwise under a state the proxy does not know (ANSI_QUOTES, a
    // multibyte character set, OceanBase's reading of executable comments) is carried only
    // when it assigns nothing
    let ambiguous = {
        let a = scanner.ambiguity;
        a.quotes || a.multibyte || (a.comment && d.may_be_oceanbase())
    };
    let mut carried = Vec::new();
    for stmt in tokens.split(|t| t.is_punct(b';')) {
        if stmt.is_empty() {
            continue;
        }
        if let Some(pin) = pins(sql, stmt) {
            return Effect::Pin(pin);
        }
        if stmt.first().is_some_and(|t| t.is_word(sql, "SET")) {
            match assignments(sql, stmt.get(1..).unwrap_or_default()) {
                Ok(list) => carried.extend(list),
                Err(pin) => return Effect::Pin(pin),
            }
        }
    }
    if carried.is_empty() {
        Effect::None
    } else if ambiguous {
        Effect::Pin(Pin::Unreadable)
    } else {
        Effect::Carry(carried)
    }
}

/// What in one statement pins its session, whatever its kind.
fn pins(sql: &[u8], stmt: &[Token]) -> Option<Pin> {
    let first = stmt.first()?;
    let word = |w: &str| first.is_word(sql, w);
    if word("LOCK") || word("UNLOCK") {
        return Some(Pin::Lock);
    }
    if word("PREPARE") || word("EXECUTE") || word("DEALLOCATE") {
        return Some(Pin::PreparedStatement);
    }
    if word("CALL") || word("DECLARE") {
        return Some(Pin::StoredProgram);
    }
    // BEGIN … END, IF, LOOP … outside a program (MariaDB); BEGIN [WORK] alone is a
    // transaction, which the status flags follow
    if ["IF", "CASE", "LOOP", "WHILE", "REPEAT"]
        .iter()
        .any(|w| word(w))
        || (word("BEGIN") && stmt.len() > 1 && !stmt.get(1).is_some_and(|t| t.is_word(sql, "WORK")))
    {
        return Some(Pin::StoredProgram);
    }
    if word("XA") || word("HANDLER") || word("BINLOG") {
        return Some(Pin::SessionCommand);
    }
    // (a KILL is not the killer's state: the session reads it, `session::mux`)
    if word("GET") || word("SHOW") {
        // GET DIAGNOSTICS; SHOW WARNINGS / ERRORS / COUNT(*) WARNINGS / PROFILE(S)
        if stmt.iter().any(|t| {
            ["WARNINGS", "ERRORS", "DIAGNOSTICS", "PROFILE", "PROFILES"]
                .iter()
                .any(|w| t.is_word(sql, w))
        }) {
            return Some(Pin::PreviousResult);
        }
    }
    if word("FLUSH") && stmt.iter().any(|t| t.is_word(sql, "LOCK")) {
        return Some(Pin::Lock);
    }
    for t in stmt {
        match t.kind {
            Tok::Var => {
                let text = t.text(sql);
                match text.strip_prefix(b"@@") {
                    // a system variable: read (its assignments are the SET reader's)
                    Some(name) => {
                        let name = name.to_ascii_lowercase();
                        let name = name
                            .strip_prefix(b"session.")
                            .or_else(|| name.strip_prefix(b"local."))
                            .unwrap_or(&name);
                        if PREVIOUS.contains(&name) {
                            return Some(Pin::PreviousResult);
                        }
                    }
                    None => return Some(Pin::UserVariable),
                }
            }
            Tok::Word => {
                let text = t.text(sql);
                if text.len() < 8 || text.len() > 19 {
                    continue;
                }
                let is = |w: &str| text.eq_ignore_ascii_case(w.as_bytes());
                if is("GET_LOCK")
                    || is("RELEASE_LOCK")
                    || is("RELEASE_ALL_LOCKS")
                    || is("IS_USED_LOCK")
                    || is("IS_FREE_LOCK")
                {
                    return Some(Pin::Lock);
                }
                if is("LAST_INSERT_ID")
                    || is("ROW_COUNT")
                    || is("FOUND_ROWS")
                    || is("SQL_CALC_FOUND_ROWS")
                {
                    return Some(Pin::PreviousResult);
                }
                if is("CONNECTION_ID") {
                    return Some(Pin::ConnectionId);
                }
                // CREATE / DROP [OR REPLACE] TEMPORARY TABLE (the only statements that make
                // or drop one)
                if is("TEMPORARY") && (word("CREATE") || word("DROP")) {
                    return Some(Pin::TemporaryTable);
                }
            }
            _ => {}
        }
    }
    None
}

/// The assignments of `SET <list>` (the tokens after SET), or why they pin.
fn assignments(sql: &[u8], list: &[Token]) -> Result<Vec<Assignment>, Pin> {
    let Some(first) = list.first() else {
        return Err(Pin::Unreadable);
    };
    let is = |t: &Token, w: &str| t.is_word(sql, w);
    // MariaDB's SET STATEMENT … FOR <statement>: for that statement only; PASSWORD: the
    // account's, no session state
    if is(first, "STATEMENT") || is(first, "PASSWORD") {
        return Ok(Vec::new());
    }
    if is(first, "ROLE") || is(first, "DEFAULT") || is(first, "TRANSACTION") {
        return Err(Pin::SetNotCarried);
    }
    // SET NAMES x [COLLATE y], SET CHARACTER SET x, SET CHARSET x: the whole statement
    if is(first, "NAMES") || is(first, "CHARSET") || is(first, "CHARACTER") {
        let values = list
            .iter()
            .skip(1)
            .all(|t| matches!(t.kind, Tok::Word | Tok::Str | Tok::QuotedIdent));
        if !values || list.len() > 5 {
            return Err(Pin::SetNotCarried);
        }
        // the tokens, not the bytes between them: a comment's end may lie among them
        let mut text = Vec::new();
        for (i, t) in list.iter().enumerate() {
            if i > 0 {
                text.push(b' ');
            }
            text.extend_from_slice(t.text(sql));
        }
        return Ok(vec![Assignment {
            key: b"names".to_vec(),
            text,
            to_default: false,
        }]);
    }
    let mut out = Vec::new();
    for item in list.split(|t| t.is_punct(b',')) {
        if let Some(a) = assignment(sql, item)? {
            out.push(a);
        }
    }
    Ok(out)
}

/// One `[SESSION|LOCAL|GLOBAL] name = value` or `@@[scope.]name = value`: Some to carry, None
/// for a global one (no session state).
fn assignment(sql: &[u8], item: &[Token]) -> Result<Option<Assignment>, Pin> {
    let mut i = 0;
    let mut global = false;
    let name: Vec<u8>;
    let first = item.first().ok_or(Pin::Unreadable)?;
    match first.kind {
        Tok::Var => {
            let text = first.text(sql).to_ascii_lowercase();
            let Some(rest) = text.strip_prefix(b"@@") else {
                return Err(Pin::UserVariable);
            };
            let (scope, n) = match rest.iter().position(|c| *c == b'.') {
                Some(dot) => (
                    rest.get(..dot).unwrap_or_default(),
                    rest.get(dot + 1..).unwrap_or_default(),
                ),
                None => (&b""[..], rest),
            };
            match scope {
                b"" | b"session" | b"local" => {}
                b"global" | b"persist" | b"persist_only" => global = true,
                _ => return Err(Pin::SetNotCarried),
            }
            name = n.to_vec();
            i = 1;
        }
        Tok::Word => {
            let w = first.text(sql).to_ascii_lowercase();
            match w.as_slice() {
                b"global" | b"persist" | b"persist_only" => {
                    global = true;
                    i = 1;
                }
                b"session" | b"local" => i = 1,
                _ => {}
            }
            let n = item.get(i).ok_or(Pin::Unreadable)?;
            if n.kind != Tok::Word {
                return Err(Pin::SetNotCarried);
            }
            name = n.text(sql).to_ascii_lowercase();
            i += 1;
        }
        _ => return Err(Pin::SetNotCarried),
    }
    if name.is_empty() || !name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') {
        return Err(Pin::SetNotCarried);
    }
    if global {
        return Ok(None);
    }
    if name == b"transaction" {
        // SET SESSION TRANSACTION ISOLATION LEVEL …
        return Err(Pin::SetNotCarried);
    }
    if NOT_CARRIED.contains(&name.as_slice()) {
        return Err(Pin::SetNotCarried);
    }
    // `=` or `:=`
    let mut rest = item.get(i..).unwrap_or_default();
    if rest.first().is_some_and(|t| t.is_punct(b':')) {
        rest = rest.get(1..).unwrap_or_default();
    }
    if !rest.first().is_some_and(|t| t.is_punct(b'=')) {
        return Err(Pin::Unreadable);
    }
    let value = rest.get(1..).unwrap_or_default();
    let simple = match value {
        [v] => matches!(v.kind, Tok::Word | Tok::Str | Tok::Number | Tok::Hex),
        [sign, v] => (sign.is_punct(b'-') || sign.is_punct(b'+')) && v.kind == Tok::Number,
        _ => false,
    };
    if !simple {
        return Err(Pin::SetNotCarried);
    }
    // autocommit is the status flags' (a session with autocommit off keeps its connection)
    if name == b"autocommit" {
        return Ok(None);
    }
    let Some(v0) = value.first() else {
        return Err(Pin::Unreadable);
    };
    let to_default = value.len() == 1 && v0.is_word(sql, "DEFAULT");
    let mut text = b"@@SESSION.".to_vec();
    text.extend_from_slice(&name);
    text.extend_from_slice(b" = ");
    // the tokens (a sign and its number), not the bytes between them (a comment)
    for t in value {
        text.extend_from_slice(t.text(sql));
    }
    Ok(Some(Assignment {
        key: name,
        text,
        to_default,
    }))
}

/// The character set variables (`names`: SET NAMES / CHARACTER SET sets all of them).
pub fn is_charset_var(key: &[u8]) -> bool {
    matches!(
        key,
        b"names"
            | b"character_set_client"
            | b"character_set_connection"
            | b"character_set_results"
            | b"collation_connection"
    )
}

/// What the backend reported a command changed in the session's system variables
/// (CLIENT_SESSION_TRACK), beyond the assignments the proxy read in its text (`read`, their
/// keys): the assignments that make the reported values again on another connection, or the
/// pin a change needs that cannot be made again so. Skipped: autocommit (the status flags'),
/// the database's character set (it follows the database), the server's hidden variables
/// (a leading underscore: seekdb reports some after DDL), the character set variables when
/// the text set the character set. A value is written back as the server reported it: a
/// number bare, anything else quoted; one with a quote, a backslash or a byte that is not
/// printable ASCII pins (its reading would depend on the connection's sql_mode and character
/// set).
pub fn reported(
    vars: &[(Vec<u8>, Vec<u8>)],
    unknown: bool,
    read: &[&[u8]],
) -> Result<Vec<Assignment>, Pin> {
    if unknown {
        return Err(Pin::SetNotCarried);
    }
    let charset_read = read.iter().any(|k| is_charset_var(k));
    let mut out = Vec::new();
    for (name, value) in vars {
        let name = &name[..];
        if read.contains(&name)
            || matches!(
                name,
                b"autocommit" | b"character_set_database" | b"collation_database"
            )
            || name.starts_with(b"_")
            || (charset_read && is_charset_var(name))
        {
            continue;
        }
        let plain_name = !name.is_empty()
            && name
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_');
        if !plain_name || is_charset_var(name) || NOT_CARRIED.contains(&name) {
            return Err(Pin::SetNotCarried);
        }
        if value
            .iter()
            .any(|&b| !(b' '..=b'~').contains(&b) || b == b'\'' || b == b'\\')
        {
            return Err(Pin::SetNotCarried);
        }
        let digits = value.strip_prefix(b"-").unwrap_or(value);
        let number = !digits.is_empty() && digits.iter().all(u8::is_ascii_digit);
        let mut text = b"@@SESSION.".to_vec();
        text.extend_from_slice(name);
        text.extend_from_slice(b" = ");
        if number {
            text.extend_from_slice(value);
        } else {
            text.push(b'\'');
            text.extend_from_slice(value);
            text.push(b'\'');
        }
        out.push(Assignment {
            key: name.to_vec(),
            text,
            to_default: false,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod reported_tests {
    use super::*;

    fn v(pairs: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        pairs
            .iter()
            .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    fn texts(r: Result<Vec<Assignment>, Pin>) -> Vec<String> {
        r.expect("carried")
            .into_iter()
            .map(|a| String::from_utf8(a.text).expect("text"))
            .collect()
    }

    #[test]
    fn reported_values_are_written_back_as_reported_numbers_bare() {
        let got = texts(reported(
            &v(&[
                ("time_zone", "+04:00"),
                ("sql_select_limit", "9223372036854775807"),
                ("sql_mode", ""),
                ("div_precision_increment", "-1"),
            ]),
            false,
            &[],
        ));
        assert_eq!(
            got,
            [
                "@@SESSION.time_zone = '+04:00'",
                "@@SESSION.sql_select_limit = 9223372036854775807",
                "@@SESSION.sql_mode = ''",
                "@@SESSION.div_precision_increment = -1",
            ]
        );
    }

    #[test]
    fn what_the_text_set_or_the_status_flags_say_is_not_carried_twice() {
        // the text's own assignment wins; autocommit, the database's character set and the
        // server's hidden variables are skipped; SET NAMES covers the character set variables
        let got = texts(reported(
            &v(&[
                ("time_zone", "+01:00"),
                ("autocommit", "OFF"),
                ("character_set_database", "utf8mb4"),
                ("_nlj_batching_enabled", "ON"),
                ("character_set_client", "utf8mb4"),
                ("lc_time_names", "de_DE"),
            ]),
            false,
            &[b"time_zone", b"names"],
        ));
        assert_eq!(got, ["@@SESSION.lc_time_names = 'de_DE'"]);
    }

    #[test]
    fn what_cannot_be_made_again_as_reported_pins() {
        let pin = |pairs: &[(&str, &str)], unknown: bool| reported(&v(pairs), unknown, &[]);
        assert_eq!(
            pin(&[], true),
            Err(Pin::SetNotCarried),
            "more than was kept"
        );
        // a character set the text did not set (the proxy reads SQL in it)
        assert_eq!(
            pin(&[("character_set_results", "binary")], false),
            Err(Pin::SetNotCarried)
        );
        // one-shot and identity values
        assert_eq!(pin(&[("insert_id", "5")], false), Err(Pin::SetNotCarried));
        // values whose reading depends on the connection's sql_mode or character set
        for value in ["it's", "a\\b", "caf\u{e9}", "tab\there"] {
            assert_eq!(
                pin(&[("lc_time_names", value)], false),
                Err(Pin::SetNotCarried),
                "{value:?}"
            );
        }
        // a name that is not a plain identifier
        assert_eq!(pin(&[("time zone", "x")], false), Err(Pin::SetNotCarried));
        assert_eq!(pin(&[("", "x")], false), Err(Pin::SetNotCarried));
    }
}

#[cfg(test)]
mod first_word_tests {
    use super::*;

    #[test]
    fn first_words_are_matched_in_any_case_and_nothing_else() {
        for w in ["SET", "set", "Deallocate", "xa", "FLUSH", "begin", "If"] {
            assert!(is_first_word(w.as_bytes()), "{w}");
            assert!(!plainly_nothing(format!("{w} x").as_bytes()), "{w}");
        }
        for w in [
            "",
            "INSERT",
            "SETS",
            "SE",
            "DEALLOCATES",
            "SELECT",
            "\u{e9}t",
        ] {
            assert!(!is_first_word(w.as_bytes()), "{w}");
        }
        assert!(plainly_nothing(b"INSERT INTO t VALUES (1)"));
        assert!(plainly_nothing(b"  select 1"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(sql: &str) -> Effect {
        effect(sql.as_bytes(), Dialect::default())
    }

    fn carried(sql: &str) -> Vec<(String, String, bool)> {
        match e(sql) {
            Effect::Carry(list) => list
                .into_iter()
                .map(|a| {
                    (
                        String::from_utf8(a.key).unwrap(),
                        String::from_utf8(a.text).unwrap(),
                        a.to_default,
                    )
                })
                .collect(),
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn plain_statements_change_nothing_carried() {
        for sql in [
            "SELECT 1",
            "SELECT @@sql_mode, @@session.time_zone",
            "INSERT INTO t VALUES (1)",
            "UPDATE t SET a = 1",
            "BEGIN",
            "START TRANSACTION",
            "COMMIT",
            "SELECT * FROM t FOR UPDATE",
            "SET autocommit = 0",
            "SET GLOBAL max_connections = 10",
            "SET STATEMENT max_statement_time=1 FOR SELECT 1",
            "USE db",
            "KILL QUERY 5",
        ] {
            assert_eq!(e(sql), Effect::None, "{sql}");
        }
    }

    #[test]
    fn session_variables_are_carried_as_written() {
        assert_eq!(
            carried("SET sql_mode = 'ANSI_QUOTES', @@session.time_zone='+00:00', LOCAL wait_timeout=28800"),
            vec![
                ("sql_mode".into(), "@@SESSION.sql_mode = 'ANSI_QUOTES'".into(), false),
                ("time_zone".into(), "@@SESSION.time_zone = '+00:00'".into(), false),
                ("wait_timeout".into(), "@@SESSION.wait_timeout = 28800".into(), false),
            ]
        );
        let mariadb = Dialect {
            flavor: crate::sql::scan::Flavor::MariaDb,
            ..Dialect::default()
        };
        assert_eq!(
            effect(
                b"/*!40101 SET NAMES utf8mb4 COLLATE utf8mb4_bin */",
                mariadb
            ),
            Effect::Carry(vec![Assignment {
                key: b"names".to_vec(),
                text: b"NAMES utf8mb4 COLLATE utf8mb4_bin".to_vec(),
                to_default: false
            }])
        );
        // the tokens are kept, not the comment's end among them
        assert_eq!(
            effect(b"/*!40101 SET NAMES */ utf8mb4", mariadb),
            Effect::Carry(vec![Assignment {
                key: b"names".to_vec(),
                text: b"NAMES utf8mb4".to_vec(),
                to_default: false
            }])
        );
        assert_eq!(
            carried("SET wait_timeout = -/* a comment */5"),
            vec![(
                "wait_timeout".into(),
                "@@SESSION.wait_timeout = -5".into(),
                false
            )]
        );
        // where OceanBase may read the comment as one, nothing is carried on a guess
        assert_eq!(
            e("/*!40101 SET NAMES utf8mb4 */"),
            Effect::Pin(Pin::Unreadable)
        );
        assert_eq!(
            carried("SET @@sql_mode := DEFAULT; SELECT 1"),
            vec![(
                "sql_mode".into(),
                "@@SESSION.sql_mode = DEFAULT".into(),
                true
            )]
        );
        assert_eq!(
            carried("set session net_write_timeout = -1, character_set_results = NULL"),
            vec![
                (
                    "net_write_timeout".into(),
                    "@@SESSION.net_write_timeout = -1".into(),
                    false
                ),
                (
                    "character_set_results".into(),
                    "@@SESSION.character_set_results = NULL".into(),
                    false
                ),
            ]
        );
    }

    #[test]
    fn state_that_cannot_be_carried_pins_with_its_reason() {
        let cases = [
            ("SET @a = 1", Pin::UserVariable),
            ("SELECT @a", Pin::UserVariable),
            ("SELECT 1; SELECT @a := 2", Pin::UserVariable),
            ("CREATE TEMPORARY TABLE t (a int)", Pin::TemporaryTable),
            ("DROP TEMPORARY TABLE t", Pin::TemporaryTable),
            (
                "CREATE OR REPLACE TEMPORARY TABLE t (a int)",
                Pin::TemporaryTable,
            ),
            ("/*!CREATE TEMPORARY TABLE t (a int)*/", Pin::TemporaryTable),
            (
                "SELECT 1; create temporary table t (a int)",
                Pin::TemporaryTable,
            ),
            ("LOCK TABLES t WRITE", Pin::Lock),
            ("SELECT GET_LOCK('x', 1)", Pin::Lock),
            ("FLUSH TABLES WITH READ LOCK", Pin::Lock),
            ("PREPARE s FROM 'SELECT 1'", Pin::PreparedStatement),
            ("SELECT LAST_INSERT_ID()", Pin::PreviousResult),
            (
                "SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 1",
                Pin::PreviousResult,
            ),
            ("SHOW WARNINGS", Pin::PreviousResult),
            ("SHOW COUNT(*) ERRORS", Pin::PreviousResult),
            ("SELECT @@warning_count", Pin::PreviousResult),
            ("SELECT CONNECTION_ID()", Pin::ConnectionId),
            ("CALL p()", Pin::StoredProgram),
            ("BEGIN NOT ATOMIC SELECT 1; END", Pin::StoredProgram),
            ("XA START 'x'", Pin::SessionCommand),
            (
                "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
                Pin::SetNotCarried,
            ),
            ("SET TRANSACTION READ ONLY", Pin::SetNotCarried),
            (
                "SET sql_mode = CONCAT(@@sql_mode, ',ANSI')",
                Pin::SetNotCarried,
            ),
            ("SET insert_id = 5", Pin::SetNotCarried),
            ("SET error_count = 7", Pin::SetNotCarried),
            ("SET ROLE r", Pin::SetNotCarried),
            ("SELECT 'unterminated; SELECT 1", Pin::Unreadable),
            ("/*!99999 SELECT 1 */ SET @x=1", Pin::UserVariable),
        ];
        for (sql, pin) in cases {
            assert_eq!(e(sql), Effect::Pin(pin), "{sql}");
        }
    }

    #[test]
    fn the_cheap_look_never_says_nothing_where_the_reading_finds_something() {
        let texts = [
            "SELECT 1",
            "SELECT @a",
            "SELECT last_insert_id()",
            "select Connection_Id()",
            "INSERT INTO t_1 VALUES ('a_b')",
            "CREATE temporary TABLE t (a int)",
            "SHOW WARNINGS",
            "set x = 1",
            "LOCK TABLES t READ",
            "SELECT FOUND_ROWS() FROM t_2",
            "UPDATE g$f SET V = 'x' WHERE K = 'k_1'",
            "SELECT a.00ROW_COUNT()",
            "  -- c\nSET @a = 1",
            "(SELECT 1)",
            "SELECT get_lock('x', 1)",
            "SELECT a__b_GET_LOCK(1)",
            "_GET_LOCK",
            "x_",
        ];
        for t in texts {
            if plainly_nothing(t.as_bytes()) {
                assert_eq!(
                    effect_read(t.as_bytes(), Dialect::default()),
                    Effect::None,
                    "{t}"
                );
            }
        }
        assert!(plainly_nothing(
            b"SELECT K, Q, T, V FROM obkv_bench.g$f WHERE K LIKE 'a_b%'"
        ));
        assert!(plainly_nothing(b"INSERT INTO t (a) VALUES (1), (2)"));
        assert!(!plainly_nothing(
            b"SELECT 1 FROM t WHERE sql_calc_found_rows"
        ));
    }

    #[test]
    fn a_row_count_read_is_given_the_count_and_keeps_its_column_name() {
        let d = Dialect::from_server_version(b"10.11.6-MariaDB");
        let sp = |sql: &str, n: i64| {
            row_count_spliced(sql.as_bytes(), d, n).map(|v| String::from_utf8(v).unwrap())
        };
        assert_eq!(
            sp("SELECT ROW_COUNT()", 3).as_deref(),
            Some("SELECT CAST(3|0 AS SIGNED) AS `ROW_COUNT()`")
        );
        assert_eq!(
            sp("select row_count( ), 1 from t", -1).as_deref(),
            Some("select CAST(-1|0 AS SIGNED) AS `row_count( )`, 1 from t")
        );
        assert_eq!(
            sp("SELECT 1, ROW_COUNT() AS n", 7).as_deref(),
            Some("SELECT 1, CAST(7|0 AS SIGNED) AS n")
        );
        assert_eq!(
            sp("SELECT IF(ROW_COUNT() > 0, 'y', 'n')", 2).as_deref(),
            Some("SELECT IF(CAST(2|0 AS SIGNED) > 0, 'y', 'n')")
        );
        // only the first statement reads the previous one's count
        assert_eq!(
            sp("SELECT ROW_COUNT(); SELECT ROW_COUNT()", 4).as_deref(),
            Some("SELECT CAST(4|0 AS SIGNED) AS `ROW_COUNT()`; SELECT ROW_COUNT()")
        );
        assert_eq!(sp("SELECT 'ROW_COUNT()'", 1), None);
        assert_eq!(sp("SELECT db.ROW_COUNT()", 1), None);
        assert_eq!(sp("SELECT 1 /* ROW_COUNT() */", 1), None);
        assert_eq!(sp("SELECT 1", 1), None);
        // an executable comment is code to MariaDB; OceanBase may read it as a comment
        assert_eq!(
            sp("SELECT /*!ROW_COUNT()*/", 5).as_deref(),
            Some("SELECT /*!CAST(5|0 AS SIGNED) AS `ROW_COUNT()`*/")
        );
        let ob = Dialect::default();
        assert_eq!(row_count_spliced(b"SELECT /*!ROW_COUNT()*/", ob, 5), None);
        assert_eq!(
            row_count_spliced(b"SELECT ROW_COUNT()", ob, 5).as_deref(),
            Some(&b"SELECT IFNULL(NULL, CAST(5 AS SIGNED)) AS `ROW_COUNT()`"[..])
        );
    }

    #[test]
    fn a_text_too_long_to_read_on_the_event_loop_pins() {
        let mut long = b"SELECT ".to_vec();
        long.resize(MAX_READ + 1, b'1');
        assert_eq!(
            effect(&long, Dialect::default()),
            Effect::Pin(Pin::Unreadable)
        );
    }

    #[test]
    fn words_in_strings_and_comments_are_not_read() {
        assert_eq!(
            e("SELECT 'GET_LOCK(@a)' /* LAST_INSERT_ID() */"),
            Effect::None
        );
        assert_eq!(e("SELECT `@a`, `connection_id`"), Effect::None);
        // a column named temporary makes no table
        assert_eq!(e("SELECT temporary FROM t"), Effect::None);
        assert!(plainly_nothing(b"SELECT temporary FROM t"));
        assert!(!plainly_nothing(b"create temporary table t (a int)"));
    }
}

/// The text with every `ROW_COUNT()` call of its first statement replaced by `n`, the count
/// the session's previous statement left on a connection it gave up (`session::mux`): None
/// when it has none, or when the text cannot be read for certain (then it runs as written).
/// A call that is a whole item of a top-level select list keeps its column name (`… AS` the
/// call as written, which is the name the backend gives it), and its type.
pub fn row_count_spliced(sql: &[u8], d: Dialect, n: i64) -> Option<Vec<u8>> {
    if sql.len() > MAX_READ || !super::classify::contains_ci(sql, b"ROW_COUNT") {
        return None;
    }
    let mut tokens: Vec<Token> = Vec::new();
    let mut scanner = Scanner::new(sql, d);
    for t in scanner.by_ref() {
        tokens.push(t.ok()?);
        if tokens.last().is_some_and(|t| t.is_punct(b';')) {
            break;
        }
    }
    let a = scanner.ambiguity;
    if a.quotes || a.multibyte || (a.comment && d.may_be_oceanbase()) {
        return None;
    }
    let select = tokens.first().is_some_and(|t| t.is_word(sql, "SELECT"));
    let mut out = Vec::with_capacity(sql.len() + 32);
    let mut at = 0;
    let mut depth = 0usize;
    // a FROM at the top level ends the select list
    let mut listing = select;
    let mut found = false;
    let mut i = 0;
    while let Some(t) = tokens.get(i) {
        match t.kind {
            Tok::Punct(b'(') => depth = depth.saturating_add(1),
            Tok::Punct(b')') => depth = depth.saturating_sub(1),
            Tok::Word if depth == 0 && t.is_word(sql, "FROM") => listing = false,
            _ => {}
        }
        let call = t.is_word(sql, "ROW_COUNT")
            && tokens.get(i + 1).is_some_and(|t| t.is_punct(b'('))
            && tokens.get(i + 2).is_some_and(|t| t.is_punct(b')'))
            && !(i > 0 && tokens.get(i - 1).is_some_and(|t| t.is_punct(b'.')));
        if !call {
            i += 1;
            continue;
        }
        let end = tokens.get(i + 2).map_or(t.end, |c| c.end);
        let item = depth == 0
            && listing
            && i > 0
            && tokens
                .get(i - 1)
                .is_some_and(|p| p.is_punct(b',') || (i == 1 && p.is_word(sql, "SELECT")))
            && match tokens.get(i + 3) {
                None => true,
                Some(next) => {
                    next.is_punct(b',')
                        || next.is_punct(b';')
                        || [
                            "FROM", "INTO", "LIMIT", "UNION", "WHERE", "ORDER", "GROUP", "HAVING",
                        ]
                        .iter()
                        .any(|w| next.is_word(sql, w))
                }
            };
        out.extend_from_slice(sql.get(at..t.start)?);
        // typed as ROW_COUNT() is (measured): on MariaDB a signed BIGINT of 21 characters, not
        // NULL; on OceanBase one of 20 that may be NULL
        let value = if matches!(d.flavor, Flavor::OceanBase | Flavor::MySqlOrOceanBase) {
            format!("IFNULL(NULL, CAST({n} AS SIGNED))")
        } else {
            format!("CAST({n}|0 AS SIGNED)")
        };
        out.extend_from_slice(value.as_bytes());
        if item {
            out.extend_from_slice(b" AS `");
            for &b in sql.get(t.start..end)? {
                if b == b'`' {
                    out.push(b'`');
                }
                out.push(b);
            }
            out.push(b'`');
        }
        at = end;
        found = true;
        i += 3;
    }
    if !found {
        return None;
    }
    out.extend_from_slice(sql.get(at..)?);
    Some(out)
}

/// `KILL [HARD | SOFT] [CONNECTION | QUERY] <id>`, the whole text: where the id is (to splice
/// another in), the id, and whether only the statement is killed (QUERY). None for any other
/// text (`KILL QUERY ID <query id>`, `KILL USER …`, an expression, more statements).
pub fn kill_target(sql: &[u8], d: Dialect) -> Option<Kill> {
    let mut tokens: Vec<Token> = Vec::with_capacity(6);
    for t in Scanner::new(sql, d) {
        let t = t.ok()?;
        if tokens.len() >= 6 {
            return None;
        }
        tokens.push(t);
    }
    // a trailing `;`
    if tokens.last().is_some_and(|t| t.is_punct(b';')) {
        tokens.pop();
    }
    let mut rest = tokens.as_slice();
    let (first, tail) = rest.split_first()?;
    if !first.is_word(sql, "KILL") {
        return None;
    }
    rest = tail;
    let mut modifier = None;
    if let Some(t) = rest.first() {
        if t.is_word(sql, "HARD") {
            modifier = Some("HARD");
        } else if t.is_word(sql, "SOFT") {
            modifier = Some("SOFT");
        }
        if modifier.is_some() {
            rest = rest.get(1..)?;
        }
    }
    let mut query = false;
    if let Some(t) = rest.first() {
        if t.is_word(sql, "QUERY") {
            query = true;
            rest = rest.get(1..)?;
        } else if t.is_word(sql, "CONNECTION") {
            rest = rest.get(1..)?;
        }
    }
    let [id] = rest else { return None };
    if id.kind != Tok::Number {
        return None;
    }
    let digits = id.text(sql);
    if digits.is_empty() || digits.len() > 10 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(Kill {
        at: id.start..id.end,
        id: u32::try_from(n).ok()?,
        query,
        modifier,
    })
}

/// Whether a text holds a KILL the proxy does not map, as the backend may read it: a KILL
/// statement anywhere in the text (after a `;`, in an executable comment's code, in a stored
/// program's body) other than `KILL [HARD | SOFT] QUERY ID n` (a query id means the same
/// through the proxy), or a KILL in the string literal a PREPARE or EXECUTE IMMEDIATE runs.
/// With multiplexing such a text is refused (`session::mux`): the id it names is a backend
/// thread, which may now serve another session. `kill_target`'s whole-text form is mapped
/// before this is asked. `state`: a statement of the text may change how the backend reads
/// the ones after it (`engine::read::changes_reading_state`). KILL is a reserved word: as a
/// word token of the session's own reading it begins a statement (or is a syntax error),
/// unless a `.` qualifies it (`t.kill`); the other readings of an ambiguous text count one
/// only where a statement begins, so that data read wrongly there (`'don\'t kill'` without
/// backslash escapes) is not taken for one. Linear in the text for each reading; the caller
/// reads a text over `MAX_READ` off the event loop.
pub fn unmapped_kill(sql: &[u8], d: Dialect, state: bool) -> bool {
    let mut first = Scanner::new(sql, d);
    first.by_ref().for_each(drop);
    let mut ambiguity = first.ambiguity;
    ambiguity.state = state;
    d.readings(ambiguity)
        .into_iter()
        .enumerate()
        .any(|(i, r)| kill_in(sql, r, true, i == 0))
}

/// `unmapped_kill` under one reading; `strings`: a PREPARE's or EXECUTE IMMEDIATE's string
/// literal is read too (one level: what it runs cannot prepare again); `anywhere`: a KILL
/// counts wherever it stands, not only where a statement begins.
fn kill_in(sql: &[u8], d: Dialect, strings: bool, anywhere: bool) -> bool {
    // after a KILL: 1 its HARD / SOFT may come, 2 QUERY was read, 3 QUERY ID was read
    let mut after_kill = 0u8;
    let mut prev: Option<Token> = None;
    let mut statement_first: Option<Token> = None;
    let mut dynamic = false;
    for t in Scanner::new(sql, d) {
        // (a reading the backend cannot lex runs nothing after the failure)
        let Ok(t) = t else { break };
        match after_kill {
            0 => {}
            1 if t.is_word(sql, "HARD") || t.is_word(sql, "SOFT") => {
                after_kill = 2;
                continue;
            }
            1 | 2 if t.is_word(sql, "QUERY") => {
                after_kill = 3;
                continue;
            }
            3 if t.is_word(sql, "ID") => {
                after_kill = 0;
                continue;
            }
            _ => return true,
        }
        if t.is_punct(b';') {
            statement_first = None;
            dynamic = false;
            prev = Some(t);
            continue;
        }
        let starts = statement_first.is_none();
        if starts {
            statement_first = Some(t);
            // (EXECUTE IMMEDIATE runs its text now; a PREPARE only prepares it, and what a
            // prepared KILL names is not mapped: README, limits)
            dynamic = t.is_word(sql, "EXECUTE");
        }
        let qualified = prev.is_some_and(|p| p.is_punct(b'.'));
        // (where a statement begins inside another: a program's body after its head, its
        // characteristics or a label, a handler's condition, a trigger's FOR EACH ROW, SET
        // STATEMENT … FOR)
        let begins = starts
            || prev.is_some_and(|p| {
                p.is_punct(b':')
                    || p.is_punct(b')')
                    || [
                        "THEN",
                        "ELSE",
                        "DO",
                        "BEGIN",
                        "ATOMIC",
                        "LOOP",
                        "REPEAT",
                        "FOR",
                        "ROW",
                        "SQLEXCEPTION",
                        "SQLWARNING",
                        "FOUND",
                        "DETERMINISTIC",
                        "SQL",
                        "DATA",
                        "DEFINER",
                        "INVOKER",
                    ]
                    .iter()
                    .any(|w| p.is_word(sql, w))
            });
        if t.is_word(sql, "KILL") && !qualified && (anywhere || begins) {
            after_kill = 1;
        } else if strings && dynamic && t.kind == Tok::Str {
            let text = super::scan::string_value_cow(sql, &t, d);
            if kill_in(&text, d, false, anywhere) {
                return true;
            }
        }
        prev = Some(t);
    }
    // a text that ends right after KILL (or KILL QUERY) names nothing the backend runs
    false
}

/// A `KILL` of a connection id (`kill_target`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kill {
    pub at: std::ops::Range<usize>,
    pub id: u32,
    pub query: bool,
    /// MariaDB's HARD or SOFT, as written.
    pub modifier: Option<&'static str>,
}

impl Kill {
    /// The KILL of connection `id` this one is, as a text of its own: nothing of the
    /// client's bytes (a comment one reading skips and another runs) goes with it.
    pub fn text_for(&self, id: u32) -> Vec<u8> {
        let mut text = b"KILL ".to_vec();
        if let Some(m) = self.modifier {
            text.extend_from_slice(m.as_bytes());
            text.push(b' ');
        }
        text.extend_from_slice(if self.query {
            b"QUERY "
        } else {
            b"CONNECTION "
        });
        text.extend_from_slice(id.to_string().as_bytes());
        text
    }
}

#[cfg(test)]
mod kill_tests {
    use super::*;

    #[test]
    fn a_kill_the_proxy_does_not_map_is_found_wherever_the_backend_reads_one() {
        let d = Dialect::default();
        for kill in [
            "SELECT 1; KILL 5",
            "KILL 5; SELECT 1",
            "DO 1;KILL QUERY 5",
            "kill hard connection 5 ;",
            "KILL (5)",
            "KILL 5 + 0",
            "KILL @x",
            "KILL USER root",
            "/*!32312 SELECT 1; */ KILL 5",
            "SELECT 1 /*! ; KILL 5 */",
            "EXECUTE IMMEDIATE 'KILL 5'",
            "EXECUTE IMMEDIATE 'SELECT 1' 'KILL 5'",
            "EXECUTE IMMEDIATE \"KILL 5\"",
            "EXECUTE IMMEDIATE 'KILL QUERY ID 5; KILL 6'",
            "CREATE PROCEDURE p() KILL 5",
            "BEGIN NOT ATOMIC KILL 5; END",
            "IF 1 THEN KILL 5; END IF",
        ] {
            assert!(unmapped_kill(kill.as_bytes(), d, false), "{kill}");
        }
        // a backslash that ends the string only without NO_BACKSLASH_ESCAPES, which the
        // text's first statement sets: the KILL runs (the caller finds the change)
        let hidden = b"SET sql_mode = 'NO_BACKSLASH_ESCAPES'; SELECT 'a\\'; KILL 5; -- '";
        assert!(unmapped_kill(hidden, d, true));
        assert!(!unmapped_kill(hidden, d, false));
        // in a program's body after its head, a handler's condition or a trigger's row
        // (found by a review: the other readings missed these)
        for body in [
            "BEGIN NOT ATOMIC DECLARE CONTINUE HANDLER FOR SQLEXCEPTION KILL 5; END",
            "CREATE PROCEDURE p() KILL 5",
            "CREATE PROCEDURE p() DETERMINISTIC KILL 5",
            "CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW KILL 5",
        ] {
            let hidden =
                format!("SET sql_mode = 'NO_BACKSLASH_ESCAPES'; SELECT 'a\\'; {body}; -- '");
            assert!(unmapped_kill(hidden.as_bytes(), d, true), "{body}");
        }
        for plain in [
            "SELECT 'KILL 5'",
            "SELECT 1 -- ; KILL 5",
            "SELECT 1 /* ; KILL 5 */",
            "SELECT `kill` FROM t",
            "SELECT t.kill FROM t",
            "SELECT @kill",
            "KILL QUERY ID 5",
            "KILL HARD QUERY ID 5; SELECT 1",
            "INSERT INTO log VALUES ('KILL 5')",
            "SELECT skill, killer FROM t",
            // preparing runs nothing (MariaDB's own ps_1general prepares ' KILL 0 ')
            "PREPARE stmt1 FROM ' KILL 0 '",
            // data the other readings misread is no statement there (found by a review: both
            // were refused)
            "UPDATE posts SET body = 'don\\'t kill it' WHERE id = 1",
            "INSERT INTO log VALUES (\"{\\\"op\\\":\\\"kill\\\"}\")",
        ] {
            assert!(!unmapped_kill(plain.as_bytes(), d, true), "{plain}");
        }
        // a version comment MariaDB skips (MySQL 5.7 and later), which OceanBase runs
        let skipped = b"SELECT 1 /*!99999 ; KILL 5 */";
        let maria = Dialect {
            flavor: Flavor::MariaDb,
            version: 101119,
            ..d
        };
        assert!(!unmapped_kill(skipped, maria, false));
        assert!(unmapped_kill(skipped, d, false));
    }

    #[test]
    fn a_kill_of_a_connection_id_is_read_and_nothing_else() {
        let d = Dialect::default();
        let k = kill_target(b"KILL 42", d).unwrap();
        assert_eq!((k.at.clone(), k.id, k.query), (5..7, 42, false));
        assert_eq!(k.text_for(9), b"KILL CONNECTION 9");
        let k = kill_target(b"kill hard query 7;", d).unwrap();
        assert_eq!((k.id, k.query), (7, true));
        assert_eq!(k.text_for(11), b"KILL HARD QUERY 11");
        // what the proxy sends is its own text: a comment of the client's does not go with it
        let k = kill_target(b"KILL QUERY 7 /*!99999 ; KILL 5 */", d).unwrap();
        assert_eq!(k.text_for(8), b"KILL QUERY 8");
        let k = kill_target(b"/*!32312 KILL */ CONNECTION 9", d);
        // (executable comment read as code: KILL CONNECTION 9)
        assert_eq!(k.map(|k| k.id), Some(9));
        for other in [
            "KILL QUERY ID 5",
            "KILL USER root",
            "KILL 5; SELECT 1",
            "KILL 1 + 1",
            "KILL 99999999999",
            "SELECT 5",
            "KILL @x",
        ] {
            assert_eq!(kill_target(other.as_bytes(), d), None, "{other}");
        }
    }
}
