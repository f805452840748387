//! Real backends for the tests: a private MariaDB and a private seekdb, started once per test
//! binary by the project's own `scripts/backend.sh`. They are killed when the test process exits
//! (PR_SET_PDEATHSIG), so a test run leaves no server behind. A backend that cannot be started
//! fails the test loudly.
//!
//! `OBKV_TEST_MARIADB` / `OBKV_TEST_SEEKDB` (HOST:PORT) point the tests at running instances
//! instead.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::raw::RawConn;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    MariaDb,
    SeekDb,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::MariaDb => "mariadb",
            Kind::SeekDb => "seekdb",
        }
    }
}

pub const BOTH: [Kind; 2] = [Kind::MariaDb, Kind::SeekDb];

pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Children are spawned from one thread that never ends: PR_SET_PDEATHSIG fires when the
/// spawning *thread* exits, and test threads end early.
type SpawnRequest = (Command, mpsc::Sender<std::io::Result<u32>>);

fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::spawn(move || {
            let mut children: Vec<Child> = Vec::new();
            while let Ok((mut cmd, reply)) = rx.recv() {
                children.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
                let r = cmd.spawn().map(|c| {
                    let pid = c.id();
                    children.push(c);
                    pid
                });
                let _ = reply.send(r);
            }
            // the sender lives in a static: never reached while the process runs
            std::thread::park();
        });
        Mutex::new(tx)
    })
}

/// Spawns a process that dies with the test process.
pub fn spawn_owned(mut cmd: Command) -> u32 {
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let (tx, rx) = mpsc::channel();
    spawner()
        .lock()
        .unwrap()
        .send((cmd, tx))
        .expect("spawner alive");
    rx.recv()
        .expect("spawner answered")
        .expect("process spawned")
}

pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

pub struct Backend {
    pub kind: Kind,
    pub addr: String,
    pub port: u16,
    pub pid: Option<u32>,
    pub dir: PathBuf,
    /// Extra server options (scripts/backend.sh passes them on).
    pub extra: Vec<String>,
}

impl Backend {
    /// Starts a new private instance (its own folder and port).
    pub fn start_private(kind: Kind, tag: &str) -> Backend {
        Self::start_private_with(kind, tag, &[])
    }

    /// A private instance with extra server options.
    pub fn start_private_with(kind: Kind, tag: &str, extra: &[String]) -> Backend {
        let dir = project_root().join("target/obkv-test").join(format!(
            "{}-{}-{}",
            kind.name(),
            tag,
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("test data folder");
        // a free port can be taken by another process before the server binds it: a start that
        // fails on the bind is tried again on another port (any other failure still panics)
        for attempt in 0.. {
            let port = free_port();
            let mut b = Backend {
                kind,
                addr: format!("127.0.0.1:{port}"),
                port,
                pid: None,
                dir: dir.clone(),
                extra: extra.to_vec(),
            };
            let taken = || {
                ["error.log", "stdout.log"].iter().any(|f| {
                    std::fs::read_to_string(dir.join(f)).is_ok_and(|t| {
                        t.contains("Address already in use") || t.contains("Bind on TCP/IP port")
                    })
                })
            };
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.start())) {
                Ok(()) => return b,
                Err(_) if attempt < 3 && taken() => {
                    b.stop();
                    for f in ["error.log", "stdout.log"] {
                        let _ = std::fs::remove_file(dir.join(f));
                    }
                }
                Err(e) => std::panic::resume_unwind(e),
            }
        }
        unreachable!("the loop returns or panics")
    }

    /// (Re)starts the server on the same folder and port, waiting until it answers queries.
    pub fn start(&mut self) {
        let mut cmd = Command::new(project_root().join("scripts/backend.sh"));
        cmd.args(["exec", self.kind.name()])
            .arg(&self.dir)
            .arg(self.port.to_string())
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let pid = spawn_owned(cmd);
        self.pid = Some(pid);
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if let Ok(mut c) = RawConn::connect(&self.addr, "root", "", None) {
                if c.query_ok("SELECT 1") {
                    return;
                }
            }
            if !process_alive(pid) {
                panic!(
                    "{} backend exited during start-up (is it installed? run scripts/install-deps.sh); logs in {}",
                    self.kind.name(),
                    self.dir.display()
                );
            }
            assert!(
                Instant::now() < deadline,
                "{} backend not ready after 180 s",
                self.kind.name()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the server (SIGTERM) and waits until it has exited.
    pub fn stop(&mut self) {
        let Some(pid) = self.pid.take() else { return };
        unsafe {
            libc::kill(pid as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while process_alive(pid) {
            if Instant::now() > deadline {
                unsafe {
                    libc::kill(pid as i32, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        if self.pid.is_some() {
            self.stop();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn clean_stale_dirs() {
    let base = project_root().join("target/obkv-test");
    let Ok(entries) = std::fs::read_dir(&base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let owner_alive = name
            .rsplit('-')
            .next()
            .and_then(|p| p.parse::<u32>().ok())
            .is_some_and(|p| p == std::process::id() || Path::new(&format!("/proc/{p}")).exists());
        if !owner_alive {
            // a backend that crashed (MariaDB prints "got signal N" and the statement): its
            // report is kept beside the directories, which go
            if let Ok(log) = std::fs::read_to_string(e.path().join("error.log")) {
                if log.contains("got signal") {
                    let _ = std::fs::write(base.join(format!("crashed-{name}-error.log")), log);
                }
            }
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

static SHARED_MARIADB: OnceLock<Backend> = OnceLock::new();
static SHARED_SEEKDB: OnceLock<Backend> = OnceLock::new();

/// MariaDB's own account of a crash in the shared instance's log (its "got signal" line, then
/// at most 60 lines from the server version on: the stack and the query), if it crashed.
fn shared_crash_report() -> Option<String> {
    let b = SHARED_MARIADB.get()?;
    if b.dir.as_os_str().is_empty() {
        return None;
    }
    let log = std::fs::read_to_string(b.dir.join("error.log")).ok()?;
    let at = log.find("got signal")?;
    let start = log[..at].rfind('\n').map_or(0, |i| i + 1);
    let mut lines = log[start..].lines();
    let first = lines.next().unwrap_or_default();
    // (past its plea to report the bug, to the version, the stack and the query)
    let rest: Vec<&str> = lines
        .skip_while(|l| !l.starts_with("Server version"))
        .take(60)
        .collect();
    Some(format!("{first}\n{}", rest.join("\n")))
}

/// A test that fails because the shared backend crashed says so, with the backend's own
/// account, in its failure output (CI shows the failures, not the backend's log): the first
/// panic after a crash prints the report, once.
fn report_backend_crashes_on_panic() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            static TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
            if let Some(report) = shared_crash_report() {
                if !TOLD.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    eprintln!("== the shared MariaDB crashed; its error log says:\n{report}");
                }
            }
        }));
    });
}

/// The backend shared by the tests of this run.
pub fn shared(kind: Kind) -> &'static Backend {
    report_backend_crashes_on_panic();
    let (cell, var) = match kind {
        Kind::MariaDb => (&SHARED_MARIADB, "OBKV_TEST_MARIADB"),
        Kind::SeekDb => (&SHARED_SEEKDB, "OBKV_TEST_SEEKDB"),
    };
    cell.get_or_init(|| {
        let backend = if let Ok(addr) = std::env::var(var) {
            let port = addr
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .expect("HOST:PORT");
            Backend {
                kind,
                addr,
                port,
                pid: None,
                dir: PathBuf::new(),
                extra: Vec::new(),
            }
        } else {
            static CLEAN: OnceLock<()> = OnceLock::new();
            CLEAN.get_or_init(clean_stale_dirs);
            Backend::start_private(kind, "shared")
        };
        if kind == Kind::SeekDb {
            // MariaDB is started with a 64 MiB max_allowed_packet (scripts/backend.sh); seekdb
            // takes it as a global variable. Set here, once, so no test depends on another
            // having set it first (sessions opened from now on get it).
            let mut root = RawConn::connect(&backend.addr, "root", "", None).expect("seekdb login");
            root.must("SET GLOBAL max_allowed_packet = 67108864");
            // seekdb ends any statement after ob_query_timeout (10 s by default), also a DDL
            // still waiting behind other sessions' DDL: in parallel runs on a loaded machine a
            // CREATE TABLE (catalog's test) failed so, and once in CI the sysbench test's DROP
            // DATABASE failed, likely so (its error was not printed then; `RawConn::must`
            // prints it now). Every test shares this instance, so its statements may wait longer;
            // the proxy reads the timeout in force for its own lock waits (docs/RULES.md).
            root.must("SET GLOBAL ob_query_timeout = 120000000");
        }
        backend
    })
}
