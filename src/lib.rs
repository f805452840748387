//! obkv-proxy: a MySQL wire-protocol proxy for OBKV-HBase tables.
//!
//! Layers, each importing only the ones before it (checked by tests/source_rules.rs):
//! `protocol` (the wire codec) → `sql` (reading SQL) → `hbase` (the OBKV model) → `config` →
//! `tls` → `net` → `engine` (the policy, pure) → `backend` (connections, pool) → `admin`
//! (counters) → `shared` → `session` (carries decisions out) → `server` (accept loop) → main.

pub mod admin;
pub mod backend;
pub mod clock;
pub mod config;
pub mod engine;
pub mod hbase;
pub mod net;
pub mod protocol;
pub mod server;
pub mod session;
pub mod shared;
pub mod sql;
pub mod timer;
pub mod tls;
pub mod ttl;
pub mod watch;
