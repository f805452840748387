//! The decision point. Every statement — text, prepared at prepare time, and prepared at execute
//! time — comes here, and the answer says what the session does with it:
//!
//! * `Forward`: send the client's bytes to the backend unchanged (the fast path for plain traffic,
//!   decided by the lexical pre-check alone);
//! * `Rewrite`: send this text instead (later: prefix-scan pruning);
//! * `Answer`: do not involve the backend; answer with a local result or error (proxy commands,
//!   later: OBKV rule violations).
//!
//! Statements the pre-check flags as possible HBase statements are forwarded for now; the OBKV
//! rules will hook in at `decide_hbase`.

use super::classify::{classify, leading_words, Class};
use crate::protocol::packets::ErrorInfo;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Forward,
    Rewrite(Vec<u8>),
    Answer(Answer),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Error(ErrorInfo),
    /// `SHOW PROXY STATUS`: the proxy's counters as a two-column result.
    ProxyStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// COM_QUERY.
    Text,
    /// COM_STMT_PREPARE.
    Prepare,
}

/// What the session remembers about a prepared statement, so COM_STMT_EXECUTE can be decided
/// without the text being re-sent.
#[derive(Debug, Clone)]
pub struct PreparedInfo {
    pub class: Class,
    pub params: u16,
}

pub fn decide(sql: &[u8], origin: Origin) -> (Class, Decision) {
    let class = classify(sql);
    let decision = match class {
        Class::Plain => Decision::Forward,
        Class::MaybeHbase => decide_hbase(sql),
        Class::ProxyCommand => decide_proxy_command(sql, origin),
    };
    (class, decision)
}

pub fn decide_execute(stmt: &PreparedInfo) -> Decision {
    match stmt.class {
        // HBase statements will be checked here with their bound parameters.
        Class::Plain | Class::MaybeHbase | Class::ProxyCommand => Decision::Forward,
    }
}

fn decide_hbase(_sql: &[u8]) -> Decision {
    Decision::Forward
}

fn decide_proxy_command(sql: &[u8], origin: Origin) -> Decision {
    if origin == Origin::Prepare {
        return Decision::Answer(Answer::Error(ErrorInfo::unsupported_in_prepared()));
    }
    let words = leading_words(sql, 4);
    match words.get(2).map(String::as_str) {
        Some("STATUS") if words.len() == 3 => Decision::Answer(Answer::ProxyStatus),
        _ => Decision::Answer(Answer::Error(ErrorInfo::new(
            1064,
            "42000",
            "obkv-proxy: unknown proxy command; supported: SHOW PROXY STATUS",
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_is_forwarded_and_proxy_commands_answered() {
        assert_eq!(decide(b"select 1", Origin::Text).1, Decision::Forward);
        assert_eq!(
            decide(b"show proxy status", Origin::Text).1,
            Decision::Answer(Answer::ProxyStatus)
        );
        assert!(
            matches!(decide(b"show proxy status", Origin::Prepare).1, Decision::Answer(Answer::Error(e)) if e.code == 1295)
        );
        assert!(
            matches!(decide(b"show proxy nonsense", Origin::Text).1, Decision::Answer(Answer::Error(e)) if e.code == 1064)
        );
    }
}
