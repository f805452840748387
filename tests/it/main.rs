//! Integration tests against real backends (MariaDB and seekdb), one test binary so the
//! backends start once per run.

mod common;
mod clients;
mod corpus;
mod streaming;
mod sysbench;
