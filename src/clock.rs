//! The clock latencies and cache ages are read with: the CPU's time-stamp counter where it is
//! invariant (a few instructions a reading; the OS clock costs about forty times more), the
//! OS's monotonic clock elsewhere. Calibrated once.

use std::sync::OnceLock;
use std::time::Duration;

fn clock() -> &'static quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// Calibrates the clock now rather than at its first reading.
pub fn calibrate() {
    clock();
    ticks_per_second();
}

/// A reading of the clock (`since_ns` turns two into a duration).
#[inline]
pub fn now() -> u64 {
    clock().raw()
}

/// Readings of `now()` a second apart (calibrated once).
pub fn ticks_per_second() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        let span = 1u64 << 32;
        let ns = clock().delta_as_nanos(0, span).max(1);
        u64::try_from(u128::from(span) * 1_000_000_000 / u128::from(ns)).unwrap_or(u64::MAX)
    })
}

/// `d` in readings of `now()` (saturating).
pub fn ticks(d: Duration) -> u64 {
    u128::from(ticks_per_second())
        .checked_mul(d.as_nanos())
        .and_then(|t| u64::try_from(t / 1_000_000_000).ok())
        .unwrap_or(u64::MAX)
}

/// The nanoseconds since `start` (a `now()` reading).
#[inline]
pub fn since_ns(start: u64) -> u64 {
    let c = clock();
    c.delta_as_nanos(start, c.raw())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_is_ticks_per_second_ticks() {
        assert_eq!(ticks(Duration::from_secs(1)), ticks_per_second());
        assert_eq!(ticks(Duration::ZERO), 0);
        assert_eq!(ticks(Duration::MAX), u64::MAX);
    }
}
