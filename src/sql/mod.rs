//! All reading of SQL, pure: the scanner (`scan`, how the backend reads bytes), owned tokens for
//! detailed readers (`lexer`), the cheap pre-check (`classify`) and one reader per statement
//! kind. Imports nothing outside `sql/` but `protocol`; what is decided about what was read is
//! `engine`'s.

pub mod assign;
pub mod classify;
pub mod ddl;
pub mod diagnostics;
pub mod digest;
pub mod dml;
pub mod dynamic;
pub mod framed;
pub mod insert;
pub mod lexer;
pub mod load;
pub mod probe;
pub mod repeat;
pub mod scan;
pub mod session_state;
pub mod splice;
pub mod view;
