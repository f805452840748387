//! Idle backend connections for proxy-auth mode, keyed by everything that shapes a session's
//! wire format (user, capability flags, charset, default database), so a reused connection
//! frames results exactly as its new client expects.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{LoggedIn, LoginSpec};

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

    /// An idle connection for this login, if one is fresh enough.
    pub fn take(&self, spec: &LoginSpec) -> Option<LoggedIn> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let list = idle.get_mut(spec)?;
        let now = Instant::now();
        list.retain(|(_, since)| now.duration_since(*since) < self.idle_timeout);
        list.pop().map(|(c, _)| c)
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
