//! The OBKV-HBase model: one place for the rules, the partition function and the timestamp
//! convention, asked by DDL checks, DML checks, transaction checks and the rewriter.

pub mod advisor;
pub mod backend;
pub mod catalog;
pub mod cells;
pub mod cli;
pub mod live;
pub mod marker;
pub mod partition;
pub mod prefix;
pub mod rules;
pub mod schema;
pub mod translate;
pub mod ttl;
