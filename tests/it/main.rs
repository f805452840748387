//! Integration tests against real backends (MariaDB and seekdb), one test binary so the
//! backends start once per run.

mod common;
mod auth_tls;
mod bad_input;
mod clients;
mod commands;
mod corpus;
mod resilience;
mod streaming;
mod sysbench;
