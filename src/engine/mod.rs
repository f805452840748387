//! The policy: every decision about a statement, pure (no I/O, no clock, no configuration
//! reads: what it needs comes in a `Context`). `router::decide` takes a text or a prepared
//! statement's text to a `Decision`; `write` holds the cell rules' statement-time checks, the
//! execution-time verdicts and the transaction guard's inputs; `prefix_scan` and `rewrite`
//! decide and splice the prefix-column predicate. `session/` carries decisions out.

pub mod ddl;
pub mod decision;
pub mod diagnostics;
pub mod execute;
pub mod explain;
pub mod prefix_scan;
pub mod read;
pub mod refusal;
pub mod rewrite;
pub mod router;
pub mod text;
pub mod write;

pub use execute::{decide_execution, BulkExecution, ExecContext, Verdict};
pub use router::{decide, Context, Decision, Origin};
