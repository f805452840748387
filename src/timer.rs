//! The proxy's timers live on a thread of their own, not on the event loops that serve
//! sessions.
//!
//! A tokio runtime with a time driver reads the clock and locks its timer wheel every time its
//! thread parks and wakes, whether or not a timer is armed: about 650 of the 7,450 instructions
//! a plain prepared point select cost through the proxy (callgrind, `scripts/cost.sh`), at two
//! parks a query. Sessions arm timers rarely (a command that does not arrive whole, a write a
//! client does not read, a login, a lend wait), so the workers' runtimes are built without a
//! time driver (`main.rs`), and every timer is made here, registered with the driver of one
//! runtime on the `obkv-timer` thread (`install`). Arming or dropping a timer locks that
//! driver's wheel from the worker's thread; a timer that fires wakes its task through its
//! waker, as any cross-thread wake-up.
//!
//! Where no timer thread is installed (unit tests, tools), the timers are the current
//! runtime's, as plain `tokio::time`. `clippy.toml` refuses `tokio::time`'s constructors
//! anywhere else, so a timer made on a worker without this module cannot compile (it would
//! panic there: its runtime has no time driver).
#![allow(clippy::disallowed_methods)]

use std::future::IntoFuture;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::time::{Instant, Interval, Sleep, Timeout};

static TIMER: OnceLock<tokio::runtime::Handle> = OnceLock::new();

/// Starts the timer thread (once; later calls do nothing). It runs for as long as the process:
/// a timer whose driver stopped panics when polled, and sessions may hold timers until the
/// process ends.
pub fn install() -> std::io::Result<()> {
    if TIMER.get().is_some() {
        return Ok(());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let handle = rt.handle().clone();
    std::thread::Builder::new()
        .name("obkv-timer".into())
        .spawn(move || rt.block_on(std::future::pending::<()>()))?;
    let _ = TIMER.set(handle);
    Ok(())
}

/// Runs `make` with the timer thread's runtime as the current one (timers made in it register
/// there), or as it is where none is installed.
#[inline]
fn on_timer_thread<T>(make: impl FnOnce() -> T) -> T {
    match TIMER.get() {
        Some(h) => {
            let _entered = h.enter();
            make()
        }
        None => make(),
    }
}

pub fn sleep(d: Duration) -> Sleep {
    on_timer_thread(|| tokio::time::sleep(d))
}

pub fn sleep_until(deadline: Instant) -> Sleep {
    on_timer_thread(|| tokio::time::sleep_until(deadline))
}

pub fn timeout<F: IntoFuture>(d: Duration, f: F) -> Timeout<F::IntoFuture> {
    on_timer_thread(|| tokio::time::timeout(d, f))
}

pub fn timeout_at<F: IntoFuture>(deadline: Instant, f: F) -> Timeout<F::IntoFuture> {
    on_timer_thread(|| tokio::time::timeout_at(deadline, f))
}

pub fn interval(period: Duration) -> Interval {
    on_timer_thread(|| tokio::time::interval(period))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the timer thread installed, a runtime without a time driver waits on timers, and
    /// one fires (a timer made with plain `tokio::time` there panics).
    #[test]
    fn timers_work_on_a_runtime_without_a_time_driver() {
        install().expect("timer thread");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let start = Instant::now();
            sleep(Duration::from_millis(20)).await;
            assert!(start.elapsed() >= Duration::from_millis(20));
            let never = std::future::pending::<()>();
            assert!(timeout(Duration::from_millis(10), never).await.is_err());
            assert_eq!(timeout(Duration::from_secs(5), async { 7 }).await, Ok(7));
            let mut every = interval(Duration::from_millis(5));
            every.tick().await;
            every.tick().await;
        });
        let plain = std::panic::catch_unwind(|| {
            rt.block_on(async { tokio::time::sleep(Duration::from_millis(1)).await })
        });
        assert!(
            plain.is_err(),
            "a plain tokio timer on a runtime without time"
        );
    }
}
