//! All reading of SQL: the scanner (`scan`, how the backend reads bytes), owned tokens for
//! detailed readers (`lexer`), the cheap pre-check (`classify`) and the decision point every
//! statement passes (`router`).

pub mod assign;
pub mod classify;
pub mod ddl;
pub mod dml;
pub mod dynamic;
pub mod insert;
pub mod lexer;
pub mod load;
pub mod prefix_scan;
pub mod probe;
pub mod rewrite;
pub mod router;
pub mod scan;
pub mod splice;
pub mod view;
pub mod write;
