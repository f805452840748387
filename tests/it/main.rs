//! Integration tests against real backends (MariaDB and seekdb), one test binary so the
//! backends start once per run.

mod advisor;
mod auth_tls;
mod backend_script;
mod bad_input;
mod catalog;
mod cli;
mod client_gone;
mod clients;
mod commands;
mod common;
mod compression;
mod corpus;
mod ddl_locks;
mod diagnostics;
mod dump;
mod existing;
mod explain;
mod false_alarms;
mod fidelity;
mod hardening;
mod hbase;
mod loopback;
mod mariadb_ext;
mod multiplex;
mod operations;
mod prefix;
mod readings;
mod resilience;
mod streaming;
mod sysbench;
mod ttl;
mod writes;
