use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use obkv_proxy::config::Config;
use tracing_subscriber::EnvFilter;

/// MySQL wire-protocol proxy for OBKV-HBase tables on OceanBase, MariaDB and MySQL.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    /// TOML configuration file (see config/obkv-proxy.toml).
    #[arg(long, short = 'c', env = "OBKV_PROXY_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// Address to listen on, HOST:PORT (overrides proxy.listen).
    #[arg(long, env = "OBKV_PROXY_LISTEN", global = true)]
    listen: Option<String>,
    /// Backend database address, HOST:PORT (overrides backend.address).
    #[arg(long, env = "OBKV_PROXY_BACKEND", global = true)]
    backend: Option<String>,
    /// Admin HTTP listener for /metrics, /livez, /readyz, HOST:PORT, or "" for none (overrides
    /// admin.listen).
    #[arg(long, env = "OBKV_PROXY_ADMIN_LISTEN", global = true)]
    admin_listen: Option<String>,
    /// Rowkeys on the admin listener's advisor views: "credentials" (a database account the
    /// backend accepts, HTTP Basic) or "off" (overrides admin.rowkeys).
    #[arg(long, env = "OBKV_PROXY_ADMIN_ROWKEYS", global = true, value_parser = ["credentials", "off"])]
    admin_rowkeys: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve clients (the default).
    Run,
    /// Check the configuration, print the effective settings and exit.
    CheckConfig,
    /// Print the mysql_native_password hash of a password, for auth.users.password_hash.
    HashPassword { password: String },
    /// GET a path of the running proxy's admin listener (admin.listen, on loopback when it
    /// listens on every address) and print the body: exit 0 on 200, 1 otherwise. The
    /// container image's HEALTHCHECK runs `obkv-proxy probe` (/readyz).
    Probe {
        #[arg(default_value = "/readyz")]
        path: String,
    },
    /// Show which partition OceanBase puts rowkeys in, for a table definition: the partition of
    /// each KEY given, or how the keys of --keys-file spread over the partitions (skew).
    Partition {
        /// The CREATE TABLE statement (its PARTITION BY clause and prefix column are used).
        #[arg(long)]
        ddl: String,
        /// Keys are hex (binary rowkeys), not text.
        #[arg(long)]
        hex: bool,
        /// A file with one rowkey per line: print the spread over the partitions instead.
        #[arg(long)]
        keys_file: Option<PathBuf>,
        keys: Vec<String>,
    },
}

fn load(cli: &Cli) -> Result<Config, String> {
    let mut cfg = match &cli.config {
        Some(p) => Config::from_file(p).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    if let Some(l) = &cli.listen {
        cfg.proxy.listen = l.clone();
    }
    // the catalog account's password need not sit in the file
    if let Ok(pw) = std::env::var("OBKV_PROXY_CATALOG_PASSWORD") {
        cfg.hbase.catalog_password = pw;
    }
    if let Some(b) = &cli.backend {
        cfg.backend.address = b.clone();
    }
    if let Some(a) = &cli.admin_listen {
        cfg.admin.listen = a.clone();
    }
    if let Some(r) = &cli.admin_rowkeys {
        cfg.admin.rowkeys = match r.as_str() {
            "off" => obkv_proxy::config::RowkeyViews::Off,
            _ => obkv_proxy::config::RowkeyViews::Credentials,
        };
    }
    cfg.validate().map_err(|e| e.to_string())?;
    cfg.check_files().map_err(|e| e.to_string())?;
    Ok(cfg)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::HashPassword { password }) = &cli.command {
        println!(
            "{}",
            obkv_proxy::protocol::auth::native_hash(password.as_bytes())
        );
        return ExitCode::SUCCESS;
    }
    if let Some(Command::Partition {
        ddl,
        hex,
        keys_file,
        keys,
    }) = &cli.command
    {
        return match obkv_proxy::hbase::cli::partition(ddl, *hex, keys_file.as_deref(), keys) {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("obkv-proxy partition: {e}");
                ExitCode::from(2)
            }
        };
    }
    let cfg = match load(&cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("obkv-proxy: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(Command::Probe { path }) = &cli.command {
        return probe(&cfg.admin.listen, path);
    }
    if let Some(Command::CheckConfig) = &cli.command {
        // (`load` checked that every file it names can be read)
        // the effective configuration (file, environment and flags applied), secrets hidden
        println!("# configuration OK: the effective settings");
        print!("{}", cfg.to_toml());
        return ExitCode::SUCCESS;
    }
    let logs = Logs::init(&cfg);
    // the metrics' registry and clock (whose calibration takes a while) before the listener is
    // bound: once the port answers, the proxy is ready
    obkv_proxy::admin::metrics::init(cfg.admin.max_tables);
    obkv_proxy::admin::advisor::init(cfg.advisor.settings());

    let workers = match Workers::start(cfg.proxy.worker_threads) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("obkv-proxy: cannot start worker threads: {e}");
            return ExitCode::FAILURE;
        }
    };
    // the accept loop and signal handling run on a runtime of their own
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("obkv-proxy: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let handles = workers.handles.clone();
    // SIGHUP: the configuration is read again (file, environment, flags) and handed to the
    // server, which applies it or keeps the running one (and says why)
    let (reload_tx, reload_rx) = tokio::sync::mpsc::unbounded_channel();
    #[cfg(unix)]
    runtime.spawn(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut hup) = signal(SignalKind::hangup()) else {
            return;
        };
        while hup.recv().await.is_some() {
            if reload_tx.send(load(&cli)).is_err() {
                return;
            }
        }
    });
    #[cfg(not(unix))]
    drop(reload_tx);
    let code = runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(&cfg.proxy.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!(
                    "obkv-proxy: cannot listen on proxy.listen = {}: {e} (choose another with --listen or OBKV_PROXY_LISTEN)",
                    cfg.proxy.listen
                );
                return ExitCode::FAILURE;
            }
        };
        let applied = move |c: &Config| logs.apply(c);
        let reloads = obkv_proxy::server::Reloads::new(reload_rx, applied);
        match obkv_proxy::server::run_reloading(listener, cfg, shutdown_signal(), handles, reloads)
            .await
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("obkv-proxy: {e}");
                ExitCode::FAILURE
            }
        }
    });
    workers.stop();
    code
}

/// `obkv-proxy probe PATH`: one GET on the admin listener, within 5 seconds.
fn probe(listen: &str, path: &str) -> ExitCode {
    use std::io::{Read, Write};
    let Ok(mut addr) = listen.parse::<std::net::SocketAddr>() else {
        eprintln!("obkv-proxy probe: admin.listen = {listen:?} is not an address");
        return ExitCode::from(2);
    };
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let wait = std::time::Duration::from_secs(5);
    let got = std::net::TcpStream::connect_timeout(&addr, wait).and_then(|mut s| {
        s.set_read_timeout(Some(wait))?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )?;
        let mut out = Vec::new();
        s.take(16 << 20).read_to_end(&mut out)?;
        Ok(out)
    });
    let out = match got {
        Ok(o) => String::from_utf8_lossy(&o).into_owned(),
        Err(e) => {
            eprintln!("obkv-proxy probe: {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    print!("{body}");
    if head.split(' ').nth(1) == Some("200") {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The log: text or JSON lines on stderr, at the configured level (RUST_LOG, when set, wins);
/// both can change on reload.
struct Logs {
    filter: tracing_subscriber::reload::Handle<EnvFilter, tracing_subscriber::Registry>,
    json: std::sync::Arc<std::sync::atomic::AtomicBool>,
    from_env: bool,
}

impl Logs {
    fn init(cfg: &Config) -> Logs {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        use tracing_subscriber::{filter::filter_fn, Layer};
        let from_env = std::env::var_os("RUST_LOG").is_some();
        let filter =
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&cfg.log.level));
        let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
        let json = std::sync::Arc::new(AtomicBool::new(
            cfg.log.format == obkv_proxy::config::LogFormat::Json,
        ));
        let (j1, j2) = (json.clone(), json.clone());
        // colours only for a terminal (a log file or a collector gets plain text)
        let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
            && std::env::var_os("NO_COLOR").is_none();
        let text_layer = tracing_subscriber::fmt::layer()
            .with_ansi(colour)
            .with_writer(std::io::stderr)
            .with_filter(filter_fn(move |_| !j1.load(Relaxed)));
        let json_layer = tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(false)
            .with_writer(std::io::stderr)
            .with_filter(filter_fn(move |_| j2.load(Relaxed)));
        tracing_subscriber::registry()
            .with(filter)
            .with(text_layer)
            .with(json_layer)
            .init();
        Logs {
            filter: handle,
            json,
            from_env,
        }
    }

    /// A reloaded configuration's log settings.
    fn apply(&self, cfg: &Config) {
        self.json.store(
            cfg.log.format == obkv_proxy::config::LogFormat::Json,
            std::sync::atomic::Ordering::Relaxed,
        );
        if !self.from_env {
            let _ = self.filter.reload(EnvFilter::new(&cfg.log.level));
        }
    }
}

/// One single-threaded runtime per worker thread, each parked on its own event loop until stop.
struct Workers {
    handles: Vec<tokio::runtime::Handle>,
    stops: Vec<tokio::sync::oneshot::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    fn start(n: usize) -> std::io::Result<Workers> {
        // auto: one loop per core, as HAProxy's threads. One loop spends less CPU per query
        // (more sessions per wake-up), but with all sessions on it, a client waits whenever that
        // thread is preempted; on the 2-core reference machine two loops served more queries at
        // 8 client threads in 14 of 16 rotated sysbench rounds and in 4 of 4 prefix-scan runs
        // (docs/PERFORMANCE.md, "One event loop per core").
        let n = if n == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            n
        };
        let mut w = Workers {
            handles: Vec::new(),
            stops: Vec::new(),
            threads: Vec::new(),
        };
        // (no time driver: its clock read and wheel lock at every park cost a plain query
        // about 650 instructions; the timers are the timer thread's, `obkv_proxy::timer`)
        obkv_proxy::timer::install()?;
        for i in 0..n {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()?;
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            w.handles.push(rt.handle().clone());
            w.stops.push(stop_tx);
            w.threads.push(
                std::thread::Builder::new()
                    .name(format!("obkv-worker-{i}"))
                    .spawn(move || {
                        // (a worker keeps the shapes of the texts it splits: sql::scan)
                        obkv_proxy::sql::scan::keep_shapes_on_this_thread();
                        rt.block_on(async {
                            let _ = stop_rx.await;
                        });
                    })?,
            );
        }
        Ok(w)
    }

    fn stop(self) {
        drop(self.stops);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(t) => t,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
