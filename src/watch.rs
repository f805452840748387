//! Clients that go while their statement runs.
//!
//! A session waits on the backend while its statement runs and reads nothing from its client
//! then, so a client that closes its connection (a driver's socket timeout, a crash, a SIGKILL)
//! would go unnoticed until the statement ends — with its transaction and its row locks held
//! all the while (measured on the landed build: a lock held by a killed client's `SELECT
//! SLEEP(30)` came free after 29.2 s through the proxy, 4.1 s directly on MariaDB).
//!
//! Watching the client from the session itself would cost every statement a second readiness
//! registration (measured: about 700 more instructions a point select, scripts/cost.sh).
//! Instead each session registers its two sockets here once (`Registry::register`, duplicated
//! file descriptors, so a number is never reused under the watcher) and marks each statement
//! in flight with one relaxed store (`Watched::start` / `done`). A watcher (`server`'s, one
//! task a process) looks every `TICK` at the sessions whose statement has been in flight since
//! before its last look, and asks the kernel whether their client hung up (`poll` with
//! POLLRDHUP, no data read). For one that did, it shuts the backend connection down — the
//! session's wait ends, and the backend sees its client gone as it sees its own — and the
//! session ends its statement on the backend (`KILL`, where an account may).
//!
//! The same look finds idle sessions: each marks the tick at which it began waiting for its
//! next command (`Watched::idle`, one more relaxed store a command). One still waiting a whole
//! tick later is asked to give back what it holds for work (`Watched::trim_requested`): the
//! watcher sets a flag and wakes its task once, so a session with nothing in flight holds a
//! few KiB (its buffers and its command's state are made again when the next command comes),
//! and a busy one pays nothing for it but that store and a flag read. A session that trims
//! also rests (`Watched::rest`): the copies of its sockets are closed, as nothing of it is in
//! flight, and made again before its next command (`Watched::resume`), so an idle client
//! holds two descriptors, as through a TCP hop. A session whose copies cannot be made (out of
//! descriptors) tries again at each command.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Waker};

/// How often the watcher looks.
pub const TICK: std::time::Duration = std::time::Duration::from_millis(200);

/// The watcher's tick count (advanced by it; read with each statement).
static TICKS: AtomicU64 = AtomicU64::new(1);

/// `since` of a statement in flight that the watcher leaves alone.
const NOT_WATCHED: u64 = u64::MAX;

/// One session's sockets and its statement's state.
#[derive(Debug)]
pub struct Watched {
    /// The tick count when the current statement was sent (0: none in flight, `NOT_WATCHED`:
    /// one the watcher leaves alone); a tick looks at it from the next tick on.
    since: AtomicU64,
    /// The watcher found the client gone and shut the backend connection down.
    gone: AtomicBool,
    /// Duplicates of the client's and the backend's sockets while the session holds them
    /// (and is not resting).
    fds: Mutex<Option<(OwnedFd, OwnedFd)>>,
    /// The session rested: its duplicates are made again before its next command (`rest`).
    resting: AtomicBool,
    /// Multiplexing: the session gave its backend connection back to its set; the watcher
    /// leaves the backend duplicate alone (another session may hold that connection) until
    /// the session holds one again (`lend_backend`, `backend_back`).
    backend_away: AtomicBool,
    /// The client speaks TLS: bytes it left unread are its close_notify, not a command.
    tls: bool,
    /// The tick count when the session began waiting for its next command (0: not waiting, or
    /// already asked to trim).
    idle_since: AtomicU64,
    /// The watcher asks the session to give back what an idle session does not need.
    trim: AtomicBool,
    /// The session's task, woken once to trim (registered by `trim_requested`).
    waker: Mutex<Option<Waker>>,
}

impl Watched {
    fn new(fds: Option<(OwnedFd, OwnedFd)>, tls: bool) -> Watched {
        Watched {
            since: AtomicU64::new(0),
            gone: AtomicBool::new(false),
            // (a session whose copies could not be made tries again at its next command)
            resting: AtomicBool::new(fds.is_none()),
            backend_away: AtomicBool::new(false),
            fds: Mutex::new(fds),
            tls,
            idle_since: AtomicU64::new(0),
            trim: AtomicBool::new(false),
            waker: Mutex::new(None),
        }
    }

    /// The session begins waiting for its next command.
    #[inline]
    pub fn idle(&self) {
        self.idle_since.store(TICKS.load(Relaxed), Relaxed);
    }

    /// Whether the watcher asked the session to trim (the flag is taken). `registered`: the
    /// session's own note that its task's waker is with the watcher (registered once, as the
    /// task's waker does not change; a wake taken by a trim is registered again).
    #[inline]
    pub fn trim_requested(&self, cx: &Context<'_>, registered: &mut bool) -> bool {
        if !*registered {
            *self.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
            *registered = true;
        }
        if self.trim.load(Relaxed) {
            self.trim.store(false, Relaxed);
            *registered = false;
            return true;
        }
        false
    }

    /// At a tick: a session waiting for its next command since before the previous tick, with
    /// nothing in flight, is asked to trim and woken (once: its mark is cleared).
    fn ask_trim(&self, tick: u64) {
        let idle = self.idle_since.load(Relaxed);
        if idle == 0 || idle + 1 >= tick || self.since.load(Relaxed) != 0 {
            return;
        }
        let waker = {
            let mut w = self.waker.lock().unwrap_or_else(|e| e.into_inner());
            // (a session that has not waited yet is looked at again next tick)
            if w.is_none()
                || self
                    .idle_since
                    .compare_exchange(idle, 0, Relaxed, Relaxed)
                    .is_err()
            {
                return;
            }
            w.take()
        };
        if let Some(w) = waker {
            self.trim.store(true, Relaxed);
            w.wake();
        }
    }

    /// A statement was sent to the backend; `watch`: the watcher looks at its client (false
    /// when the client already sent more: it is there, as MariaDB would find it).
    #[inline]
    pub fn start(&self, watch: bool) {
        let since = if watch {
            TICKS.load(Relaxed)
        } else {
            NOT_WATCHED
        };
        self.since.store(since, Relaxed);
    }

    /// Its response ended.
    #[inline]
    pub fn done(&self) {
        self.since.store(0, Relaxed);
    }

    /// A statement is in flight (started, not done).
    pub fn in_flight(&self) -> bool {
        self.since.load(Relaxed) != 0
    }

    /// Whether the watcher found the client gone (and shut the backend connection down).
    pub fn client_gone(&self) -> bool {
        self.gone.load(Relaxed)
    }

    /// The session's backend connection changed (a proxy-auth change of user).
    pub fn set_backend(&self, backend: &impl AsFd) {
        let mut fds = self.fds.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some((_, b)), Ok(new)) = (fds.as_mut(), backend.as_fd().try_clone_to_owned()) {
            *b = new;
        }
    }

    /// The session rests (the watcher found it idle, and it gave back what it holds): the
    /// watcher's copies of its sockets are closed, as nothing of it is in flight to watch, so
    /// a resting session holds its two sockets only (10,000 idle clients hold 20,000
    /// descriptors, not 40,000). `resume` makes them again before its next command.
    /// Whether it closed them (false: the session was resting already, or is not watched).
    pub fn rest(&self) -> bool {
        let mut fds = self.fds.lock().unwrap_or_else(|e| e.into_inner());
        let had = fds.take().is_some();
        if had {
            self.resting.store(true, Relaxed);
        }
        had
    }

    /// Before the next command of a session that rested: its sockets duplicated again (one
    /// that cannot have them now, out of descriptors, is not watched until it rests again).
    /// Costs a load for a session that did not rest.
    #[inline]
    pub fn resume(&self, client: &impl AsFd, backend: &impl AsFd) {
        if self.resting.load(Relaxed) {
            self.resume_watching(client.as_fd(), backend.as_fd());
        }
    }

    #[cold]
    fn resume_watching(
        &self,
        client: std::os::fd::BorrowedFd<'_>,
        backend: std::os::fd::BorrowedFd<'_>,
    ) {
        let mut fds = self.fds.lock().unwrap_or_else(|e| e.into_inner());
        if !self.resting.swap(false, Relaxed) {
            return;
        }
        if let (Ok(c), Ok(b)) = (client.try_clone_to_owned(), backend.try_clone_to_owned()) {
            *fds = Some((c, b));
        }
    }

    /// Multiplexing: the session's backend connection goes back to its set. Under the lock a
    /// check holds: once this returns, the watcher never shuts that connection down for this
    /// session (a check under way has ended first). No system call.
    pub fn lend_backend(&self) {
        let _fds = self.fds.lock().unwrap_or_else(|e| e.into_inner());
        self.backend_away.store(true, Relaxed);
    }

    /// Multiplexing: the session holds a connection again; `same`: the one it gave back last
    /// (its duplicate still stands for it), else the duplicate is made of this one.
    pub fn backend_back(&self, backend: &impl AsFd, same: bool) {
        let mut fds = self.fds.lock().unwrap_or_else(|e| e.into_inner());
        if !same {
            if let Some((_, b)) = fds.as_mut() {
                match backend.as_fd().try_clone_to_owned() {
                    Ok(new) => *b = new,
                    Err(_) => {
                        // unwatched until its duplicates can be made again
                        *fds = None;
                        self.resting.store(true, Relaxed);
                    }
                }
            }
        }
        self.backend_away.store(false, Relaxed);
    }

    /// The session lets its sockets go: the watcher's copies are closed with them.
    pub fn release(&self) {
        *self.fds.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.resting.store(false, Relaxed);
        // (the task's waker holds the task: let it go with the sockets)
        *self.waker.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.idle_since.store(0, Relaxed);
    }

    /// At a tick: a statement in flight since an earlier tick whose client hung up gets its
    /// backend connection shut down (true).
    fn check(&self, tick: u64) -> bool {
        let since = self.since.load(Relaxed);
        if since == 0 || since >= tick || self.gone.load(Relaxed) {
            return false;
        }
        let fds = self.fds.lock().unwrap_or_else(|e| e.into_inner());
        let Some((client, backend)) = fds.as_ref() else {
            return false;
        };
        if self.backend_away.load(Relaxed) {
            return false;
        }
        if !hung_up(client, self.tls) {
            return false;
        }
        self.gone.store(true, Relaxed);
        let _ = rustix::net::shutdown(backend, rustix::net::Shutdown::Both);
        true
    }
}

/// Whether the peer of `fd` is gone, without reading from it, as MariaDB asks of its own
/// client (`vio_is_connected`): the connection broke, or the peer closed it and sent nothing
/// the server has not read yet (a client that sent its next command and closed has its
/// command run, as directly). A TLS client's unread bytes after it closed are its
/// close_notify: it is gone.
fn hung_up(fd: &OwnedFd, tls: bool) -> bool {
    use rustix::event::{poll, PollFd, PollFlags};
    let mut p = [PollFd::new(fd, PollFlags::RDHUP)];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let revents = match poll(&mut p, Some(&zero)) {
        Ok(n) if n > 0 => p[0].revents(),
        _ => return false,
    };
    if revents.intersects(PollFlags::HUP | PollFlags::ERR) {
        return true;
    }
    revents.contains(PollFlags::RDHUP)
        && (tls || rustix::io::ioctl_fionread(fd).map_or(true, |n| n == 0))
}

/// The sessions being watched.
#[derive(Debug, Default)]
pub struct Registry {
    sessions: Mutex<Vec<Weak<Watched>>>,
}

impl Registry {
    /// A session's sockets, watched until it drops its `Watched` (or calls `release`). When
    /// they cannot be duplicated (out of descriptors: 10,000 clients logging in at once near
    /// the process's limit) the session is not watched until its next command makes them
    /// (`Watched::resume`).
    pub fn register(&self, client: &impl AsFd, tls: bool, backend: &impl AsFd) -> Arc<Watched> {
        let fds = match (
            client.as_fd().try_clone_to_owned(),
            backend.as_fd().try_clone_to_owned(),
        ) {
            (Ok(c), Ok(b)) => Some((c, b)),
            _ => None,
        };
        let w = Arc::new(Watched::new(fds, tls));
        let mut s = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        // the list is swept of ended sessions as it grows (amortised: each sweep at least
        // halves what it walks next time)
        if s.len() >= 64 && s.len().is_power_of_two() {
            s.retain(|w| w.strong_count() > 0);
        }
        s.push(Arc::downgrade(&w));
        w
    }

    /// One tick: advances the clock statements are marked with and checks every session whose
    /// statement was in flight before it; sessions idle since before the previous tick are
    /// asked to trim. Returns the sessions found gone.
    pub fn tick(&self) -> Vec<Arc<Watched>> {
        let tick = TICKS.fetch_add(1, Relaxed) + 1;
        let live: Vec<Arc<Watched>> = {
            let mut s = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
            s.retain(|w| w.strong_count() > 0);
            s.iter().filter_map(Weak::upgrade).collect()
        };
        for w in &live {
            w.ask_trim(tick);
        }
        live.into_iter().filter(|w| w.check(tick)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_lent_backend_connection_is_never_shut_down_for_the_session_that_lent_it() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client_side = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server_side, _) = l.accept().unwrap();
        let bl = TcpListener::bind("127.0.0.1:0").unwrap();
        let lent = TcpStream::connect(bl.local_addr().unwrap()).unwrap();
        let (mut lent_peer, _) = bl.accept().unwrap();
        let other = TcpStream::connect(bl.local_addr().unwrap()).unwrap();
        let (mut other_peer, _) = bl.accept().unwrap();
        let reg = Registry::default();
        let w = reg.register(&server_side, false, &lent);
        // the connection goes back to its set, then the client hangs up with a statement
        // in flight (a race the session's own check ends): the lent connection stays up
        w.lend_backend();
        w.start(true);
        drop(client_side);
        reg.tick();
        assert!(reg.tick().is_empty());
        assert!(!w.client_gone());
        lent_peer.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 4];
        assert!(
            std::io::Read::read(&mut lent_peer, &mut buf).is_err(),
            "still open, nothing sent"
        );
        // lent another connection: that one is the session's, and it is shut down
        w.backend_back(&other, false);
        assert_eq!(reg.tick().len(), 1);
        assert!(w.client_gone());
        assert_eq!(std::io::Read::read(&mut other_peer, &mut buf).unwrap(), 0);
        assert!(
            std::io::Read::read(&mut lent_peer, &mut buf).is_err(),
            "the lent one untouched"
        );
    }

    #[test]
    fn a_client_that_hangs_up_mid_statement_is_found_and_only_then() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client_side = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server_side, _) = l.accept().unwrap();
        let bl = TcpListener::bind("127.0.0.1:0").unwrap();
        let backend = TcpStream::connect(bl.local_addr().unwrap()).unwrap();
        let (mut backend_peer, _) = bl.accept().unwrap();
        let reg = Registry::default();
        let w = reg.register(&server_side, false, &backend);
        // no statement in flight: nothing to look at
        assert!(reg.tick().is_empty());
        w.start(true);
        // in flight since this tick: looked at from the next one, and the client is there
        // (data it sends is no hang-up)
        (&client_side).write_all(b"more").unwrap();
        assert!(reg.tick().is_empty());
        assert!(reg.tick().is_empty());
        let mut more = [0u8; 4];
        std::io::Read::read_exact(&mut server_side, &mut more).unwrap();
        drop(client_side);
        let gone = reg.tick();
        assert_eq!(gone.len(), 1);
        assert!(w.client_gone());
        // the backend connection was shut down: its peer reads the end
        let mut buf = [0u8; 4];
        assert_eq!(std::io::Read::read(&mut backend_peer, &mut buf).unwrap(), 0);
        // found once
        assert!(reg.tick().is_empty());
        assert!(w.in_flight());
        w.done();
        assert!(!w.in_flight());
        // a session that ended is dropped from the list
        drop((gone, w));
        reg.tick();
        assert!(reg.sessions.lock().unwrap().is_empty());
    }

    #[test]
    fn a_resting_session_holds_no_copies_and_is_watched_again_when_it_resumes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client_side = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server_side, _) = l.accept().unwrap();
        let bl = TcpListener::bind("127.0.0.1:0").unwrap();
        let backend = TcpStream::connect(bl.local_addr().unwrap()).unwrap();
        let (mut backend_peer, _) = bl.accept().unwrap();
        let reg = Registry::default();
        let w = reg.register(&server_side, false, &backend);
        let copies = |w: &Watched| w.fds.lock().unwrap().is_some();
        assert!(copies(&w));
        assert!(w.rest());
        assert!(!copies(&w), "a resting session's copies are closed");
        // (resting twice, or a release after it, changes nothing)
        assert!(!w.rest());
        assert!(!copies(&w));
        w.resume(&server_side, &backend);
        assert!(copies(&w), "made again before the next command");
        w.resume(&server_side, &backend);
        // watched as before: a client gone mid-statement shuts the backend down
        w.start(true);
        reg.tick();
        drop(client_side);
        assert_eq!(reg.tick().len(), 1);
        let mut buf = [0u8; 4];
        assert_eq!(std::io::Read::read(&mut backend_peer, &mut buf).unwrap(), 0);
        // a session released for good is not watched again by a resume
        w.release();
        w.resume(&server_side, &backend);
        assert!(!copies(&w));
    }

    #[test]
    fn a_client_that_sent_its_next_command_and_closed_is_there_until_it_is_read() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client_side = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server_side, _) = l.accept().unwrap();
        let bl = TcpListener::bind("127.0.0.1:0").unwrap();
        let backend = TcpStream::connect(bl.local_addr().unwrap()).unwrap();
        let _peer = bl.accept().unwrap();
        let reg = Registry::default();
        let w = reg.register(&server_side, false, &backend);
        // a statement sent while the session held more of the client's bytes is not watched
        w.start(false);
        assert!(w.in_flight());
        w.start(true);
        reg.tick();
        client_side.write_all(b"\x01\0\0\0\x01").unwrap();
        client_side.shutdown(std::net::Shutdown::Write).unwrap();
        // MariaDB runs a command a client sent before it closed: so does the proxy
        assert!(reg.tick().is_empty());
        let mut buf = [0u8; 5];
        std::io::Read::read_exact(&mut server_side, &mut buf).unwrap();
        assert_eq!(reg.tick().len(), 1);
        // the same for a TLS client would be its close_notify: gone at once
        let l2 = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c2 = TcpStream::connect(l2.local_addr().unwrap()).unwrap();
        let (s2, _) = l2.accept().unwrap();
        let w2 = reg.register(&s2, true, &backend);
        w2.start(true);
        reg.tick();
        c2.write_all(b"\x15\x03\x03\0\x02\x01\0").unwrap();
        drop(c2);
        assert_eq!(reg.tick().len(), 1);
    }
}
