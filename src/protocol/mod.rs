//! The MySQL client/server protocol: framing, the connection phase, status packets and the
//! response state machine. No policy lives here.

pub mod auth;
pub mod compress;
pub mod constants;
pub mod execute;
pub mod handshake;
pub mod packets;
pub mod response;
pub mod stream;
pub mod wire;
