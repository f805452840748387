//! The one-partition transaction guard, and the verdict on a checked statement (the cell rules
//! first, then the guard).

use super::checked::{Checked, Place, Touch, WriteRules};

use crate::config::Transactions;
use crate::hbase::rules::{Finding, Level, Rule, ER_NOT_SUPPORTED};

/// The session's transaction as the guard sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Txn {
    /// Inside an explicit transaction (SERVER_STATUS_IN_TRANS, or autocommit off).
    pub active: bool,
    /// Fixed by the transaction's first write (or locking read) on an HBase table.
    pub pinned: Option<Place>,
}

/// The cell rules' and the guard's verdict on one statement or execution, together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub refuse: Option<Finding>,
    /// Warnings and notes for the client (SHOW WARNINGS).
    pub warnings: Vec<Finding>,
    /// Inside a transaction: the partition this statement fixes (its first write).
    pub pin: Option<Place>,
    /// Where the statement's rows are, given back when it may run (for the rowkey advisor).
    pub touch: Option<Touch>,
    /// The rows it writes, given back when it may run (for the rowkey advisor).
    pub rows: super::checked::RowsSeen,
}

/// Judges a checked statement: the cell rules by `rules.cells` first, then the guard against
/// the transaction `txn`.
pub fn verdict(checked: Checked, rules: &WriteRules, txn: &Txn) -> Outcome {
    let judged = crate::hbase::rules::judge(rules.cells, checked.findings);
    let mut out = Outcome {
        refuse: judged.refuse,
        warnings: judged.warnings,
        pin: None,
        touch: None,
        rows: Default::default(),
    };
    if out.refuse.is_some() {
        return out;
    }
    if let Some(touch) = &checked.touch {
        match guard(touch, txn, rules.transactions) {
            Guarded::Refuse(f) => out.refuse = Some(f),
            Guarded::Warn(f) => out.warnings.push(f),
            Guarded::Fine { pin } => out.pin = pin,
        }
    }
    if out.refuse.is_none() {
        out.touch = checked.touch;
        out.rows = checked.rows;
    }
    out
}

/// The guard's verdict on one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guarded {
    /// May run; inside a transaction, `pin` is the partition it fixes (its first write).
    Fine {
        pin: Option<Place>,
    },
    Refuse(Finding),
    /// Runs, with this warning.
    Warn(Finding),
}

/// 1235 ER_NOT_SUPPORTED_YET: what OBKV-HBase does not do (a distributed transaction).
fn x(rule: Rule, message: String) -> Finding {
    Finding::error(rule, ER_NOT_SUPPORTED, "42000", message)
}

/// The one-partition transaction guard for a statement whose rows are `touch`.
pub fn guard(touch: &Touch, txn: &Txn, mode: Transactions) -> Guarded {
    let soft = |f: Finding| match mode {
        Transactions::Warn => Guarded::Warn(Finding {
            level: Level::Warning,
            ..f
        }),
        _ => Guarded::Refuse(f),
    };
    if mode == Transactions::Off {
        return Guarded::Fine { pin: None };
    }
    if !txn.active {
        // a statement of its own: its cells may span partitions, each a transaction of its own
        return match touch {
            Touch::At(places) if places.len() > 1 => {
                let f = x(
                    Rule::X3,
                    format!(
                        "this statement's rows are in {} partitions (first {}, then {}); OBKV-HBase keeps a \
                         unit of work in one partition: split it per partition",
                        places.len(),
                        places[0].describe(),
                        places[1].describe()
                    ),
                );
                if mode == Transactions::Strict {
                    Guarded::Refuse(f)
                } else {
                    Guarded::Warn(Finding {
                        level: Level::Warning,
                        ..f
                    })
                }
            }
            _ => Guarded::Fine { pin: None },
        };
    }
    match touch {
        Touch::Nothing => Guarded::Fine { pin: None },
        Touch::Unknown { table, why } => soft(x(
            Rule::X2,
            format!(
                "inside a transaction obkv-proxy must know the partition of every write or locking read on \
                 {table}, and this statement does not pin one ({why}); give its rowkey with K = …, K IN (…) or a \
                 prefix of K"
            ),
        )),
        Touch::At(places) => {
            let Some(first) = places.first() else {
                return Guarded::Fine { pin: None };
            };
            let pinned = txn.pinned.as_ref().unwrap_or(first);
            if let Some(other) = places.iter().find(|p| !p.same_partition(pinned)) {
                let how = if txn.pinned.is_some() {
                    "this transaction is in"
                } else {
                    "this statement starts in"
                };
                return soft(x(
                    Rule::X1,
                    format!(
                        "{how} {}, and this statement also touches {}; OBKV-HBase transactions stay in one partition \
                         of one table group: COMMIT first, or keep the unit of work under one rowkey prefix",
                        pinned.describe(),
                        other.describe()
                    ),
                ));
            }
            Guarded::Fine {
                pin: txn.pinned.is_none().then(|| first.clone()),
            }
        }
    }
}
