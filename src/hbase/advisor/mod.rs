//! The live rowkey-design advisor: what the proxy sees of each HBase table's traffic, kept in
//! a fixed budget (`table`), the statistics it needs (`stats`), and the guides' rules read
//! from them (`detect`). Pure; the session feeds it (`crate::advisor` keeps the tables).

pub mod detect;
pub mod stats;
pub mod table;
