//! obkv-proxy: a MySQL wire-protocol proxy for OBKV-HBase tables.
//!
//! Layers, outermost first: `server` (accept loop, shutdown) → `session` (handshake, command
//! loop) → `sql` (classification and the decision point) → `backend` (connections, pool).
//! `protocol` is the wire codec shared by both sides; `admin` holds the counters.

pub mod admin;
pub mod backend;
pub mod config;
pub mod hbase;
pub mod net;
pub mod protocol;
pub mod server;
pub mod session;
pub mod shared;
pub mod sql;
pub mod tls;
