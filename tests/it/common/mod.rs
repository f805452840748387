pub mod backends;
pub mod proxy;
pub mod raw;

pub use backends::{shared, Kind, BOTH};
