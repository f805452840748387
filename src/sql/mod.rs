//! Statement classification and the decision point every statement passes.

pub mod classify;
pub mod lexer;
pub mod router;
