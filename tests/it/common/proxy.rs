//! Starting obkv-proxy for a test: in-process on a port-0 listener (fast, many at once), or as
//! the real binary (for memory measurements and crash checks).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use obkv_proxy::config::Config;
use tokio::sync::oneshot;

use super::backends::{free_port, process_alive, project_root, spawn_owned};

pub fn config_for(backend: &str) -> Config {
    let mut c = Config::default();
    c.backend.address = backend.to_string();
    c.proxy.listen = "127.0.0.1:0".into();
    // no Unix socket unless a test asks for one (tests/it/clients.rs)
    c.proxy.socket = String::new();
    c.proxy.shutdown_grace_ms = 2000;
    // no admin listener unless a test asks for one (tests/it/operations.rs)
    c.admin.listen = String::new();
    // OBKV_TEST_MULTIPLEX=1: every proxy a test starts multiplexes its clients on at most 8
    // backend connections a user (issue 43; the test command runs the HBase rule tests so)
    if std::env::var("OBKV_TEST_MULTIPLEX").is_ok_and(|v| v == "1") {
        c.multiplex.mode = obkv_proxy::config::MultiplexMode::Transaction;
        c.multiplex.max_backend_connections = 8;
    }
    c
}

/// A proxy running on its own runtime thread; stopped (gracefully) on drop.
pub struct InProcessProxy {
    pub addr: String,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

pub fn start(config: Config) -> InProcessProxy {
    // RUST_LOG=obkv_proxy=debug shows the in-process proxies' logs when a test needs explaining
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .try_init();
    }
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind(&config.proxy.listen)
                .await
                .expect("bind");
            addr_tx
                .send(listener.local_addr().expect("addr").to_string())
                .expect("report addr");
            obkv_proxy::server::run(listener, config, async {
                let _ = stop_rx.await;
            })
            .await
            .expect("proxy ran");
        });
    });
    let addr = addr_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("proxy started");
    InProcessProxy {
        addr,
        stop: Some(stop_tx),
        thread: Some(thread),
    }
}

impl Drop for InProcessProxy {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The obkv-proxy binary as a child process, logging to a file.
pub struct ProxyProcess {
    pub addr: String,
    pub pid: u32,
    pub log: PathBuf,
}

pub fn spawn_binary(backend: &str, extra: &[&str]) -> ProxyProcess {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let log = project_root()
        .join("target/obkv-test")
        .join(format!("proxy-{port}-{}.log", std::process::id()));
    std::fs::create_dir_all(log.parent().expect("dir")).expect("log dir");
    let logf = std::fs::File::create(&log).expect("log file");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_obkv-proxy"));
    cmd.args(["--listen", &addr, "--backend", backend]);
    // no admin listener unless the test asks for one
    if !extra.contains(&"--admin-listen") {
        cmd.args(["--admin-listen", ""]);
    }
    cmd.args(extra)
        .env(
            "RUST_LOG",
            std::env::var("OBKV_TEST_PROXY_LOG").unwrap_or_else(|_| "info".into()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(logf);
    let pid = spawn_owned(cmd);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            process_alive(pid),
            "proxy exited at start: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        assert!(Instant::now() < deadline, "proxy did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    ProxyProcess { addr, pid, log }
}

impl ProxyProcess {
    pub fn rss_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid)).expect("proxy alive");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS")
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn alive(&self) -> bool {
        process_alive(self.pid)
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        unsafe {
            libc::kill(self.pid as i32, libc::SIGTERM);
        }
    }
}
