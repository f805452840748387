//! Idle backend connections for proxy-auth mode, keyed by everything that shapes a session's
//! wire format (user, capability flags, charset, default database), so a reused connection
//! frames results exactly as its new client expects.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

use super::{LoggedIn, LoginSpec};

/// An idle connection has nothing to say: readable means closed (EOF) or out of step.
fn still_open(tcp: &TcpStream) -> bool {
    let mut probe = [0u8; 1];
    matches!(tcp.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

pub struct Pool {
    idle: Mutex<HashMap<LoginSpec, Vec<(LoggedIn, Instant)>>>,
    max_idle: usize,
    idle_timeout: Duration,
}

impl Pool {
    pub fn new(max_idle: usize, idle_timeout: Duration) -> Self {
        Pool {
            idle: Mutex::new(HashMap::new()),
            max_idle,
            idle_timeout,
        }
    }

    /// An idle connection for this login, if one is fresh enough and still open: one the backend
    /// closed while it sat idle (a restart, wait_timeout) is dropped here, not handed to a client.
    pub fn take(&self, spec: &LoginSpec) -> Option<LoggedIn> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.get_mut(spec)?;
        let now = Instant::now();
        list.retain(|(_, since)| now.duration_since(*since) < self.idle_timeout);
        while let Some((conn, _)) = list.pop() {
            if still_open(conn.stream.get_ref().tcp()) {
                return Some(conn);
            }
        }
        None
    }

    /// Returns a connection that has been reset; drops it when the pool is full.
    pub fn put(&self, spec: LoginSpec, conn: LoggedIn) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let total: usize = idle.values().map(Vec::len).sum();
        if total >= self.max_idle {
            return;
        }
        idle.entry(spec).or_default().push((conn, Instant::now()));
    }

    pub fn idle_count(&self) -> usize {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.values().map(Vec::len).sum()
    }
}
