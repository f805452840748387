//! The TTL task where the backend has none (seekdb, MariaDB/MySQL): the cells that a family's
//! `TimeToLive` and `MaxVersions` age out (`hbase::ttl`, OceanBase's rule) are deleted in
//! small batches, each its own short transaction on the proxy's own connection (the catalog
//! account), walking a table partition by partition in primary-key order.
//!
//! Shared state lives in the backend, so any proxy in front of it can run, resume or watch a
//! task: task rows (one per partition, with the walk's position and counts) in the catalog
//! schema, moved to a history table when done, shown as OceanBase shows them
//! (`oceanbase.DBA_OB_KV_TTL_TASKS`, `…_HISTORY`). One proxy works a table at a time: it holds
//! the table's lease row, which each batch checks and renews in its own transaction (so a batch
//! commits only while its proxy holds the lease) and which runs out `ttl.lease_ms` after its
//! holder stops renewing it (a proxy killed mid-run). A batch's deletions, its position and its
//! counts commit together: a run taken over goes on from the last committed batch, and no
//! batch is applied twice.
//!
//! Triggered by `ALTER SYSTEM TRIGGER TTL` (answered by the session, `command`), or each day
//! in `ttl.duty_duration`; `SUSPEND`, `RESUME` and `CANCEL` act on the task rows.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use crate::backend::{self, LoggedIn, LoginSpec, QueryResult, Row};
use crate::config::Config;
use crate::hbase::backend::Flavor;
use crate::hbase::catalog::{self, Catalog};
use crate::hbase::marker::{self, Marker};
use crate::hbase::ttl::Command;
use crate::hbase::ttl::{
    self, status, Attributes, Counts, DutyWindow, NewTask, Position, Ranks, TaskTables, Verdict,
    Walk, NOW_MS,
};
use crate::protocol::constants::{cap, er, CHARSET_UTF8MB4_GENERAL_CI};
use crate::protocol::packets::ErrorInfo;
use crate::shared::Shared;
use crate::sql::ddl::{self, Statement};

/// OceanBase's error codes for TTL commands (sent as they are to MySQL clients).
pub const ER_TTL_NOT_ENABLE: u16 = er::TTL_NOT_ENABLE;
pub const ER_TTL_CMD_NOT_ALLOWED: u16 = er::TTL_CMD_NOT_ALLOWED;
pub const ER_TTL_NO_TASK_RUNNING: u16 = er::TTL_NO_TASK_RUNNING;

/// The proxy's own connection for the task (the catalog account, autocommit, utf8mb4).
struct Conn {
    c: LoggedIn,
    timeout: Duration,
}

fn err_text(p: &[u8]) -> String {
    // 0xff, code, '#', SQLSTATE, message
    let code = crate::protocol::packets::parse_err_code(p).unwrap_or(0);
    let msg = p.get(9..).unwrap_or_default();
    format!("{code}: {}", String::from_utf8_lossy(msg))
}

impl Conn {
    async fn open(cfg: &Config, shared: &Shared) -> Result<Conn, String> {
        let spec = LoginSpec {
            user: cfg.hbase.catalog_user.clone(),
            password: cfg.hbase.catalog_password.clone(),
            caps: cap::OWN_LOGIN,
            ext_caps: 0,
            charset: CHARSET_UTF8MB4_GENERAL_CI,
            database: None,
        };
        let timeout = cfg.connect_timeout().max(Duration::from_secs(5));
        let c = backend::login(
            &cfg.backend.address,
            timeout,
            &spec,
            shared.backend_tls.as_ref(),
        )
        .await
        .map_err(|e| format!("cannot log in as the catalog account: {e}"))?;
        let mut conn = Conn {
            c,
            timeout: Duration::from_secs(60),
        };
        // a proxy cut off (not killed) mid-batch: the backend ends its connection, and with it
        // the batch's transaction and locks, within a minute rather than hours
        let _ = conn.run(b"SET SESSION wait_timeout = 60").await;
        Ok(conn)
    }

    async fn run(&mut self, sql: &[u8]) -> Result<QueryResult, String> {
        match crate::timer::timeout(
            self.timeout,
            backend::query(&mut self.c.stream, self.c.caps, sql),
        )
        .await
        {
            Ok(Ok((r, _))) => Ok(r),
            Ok(Err(e)) => Err(format!("connection: {e}")),
            Err(_) => Err("statement timed out".into()),
        }
    }

    /// Rows of a SELECT; an ERR is an error.
    async fn rows(&mut self, sql: &str) -> Result<Vec<Row>, String> {
        match self.run(sql.as_bytes()).await? {
            QueryResult::Rows(r) => Ok(r),
            QueryResult::Ok(_) => Ok(Vec::new()),
            QueryResult::Err(p) => Err(err_text(&p)),
        }
    }

    /// Affected rows of a statement; an ERR is an error.
    async fn exec(&mut self, sql: &[u8]) -> Result<u64, String> {
        match self.run(sql).await? {
            QueryResult::Ok(ok) => Ok(ok.affected_rows),
            QueryResult::Rows(_) => Ok(0),
            QueryResult::Err(p) => Err(err_text(&p)),
        }
    }

    async fn rollback(&mut self) {
        let _ = self.run(b"ROLLBACK").await;
    }

    /// Runs `sqls` in one transaction; rolled back on the first error.
    async fn transaction(&mut self, sqls: &[Vec<u8>]) -> Result<Vec<u64>, String> {
        self.exec(b"START TRANSACTION").await?;
        let mut out = Vec::with_capacity(sqls.len());
        for s in sqls {
            match self.exec(s).await {
                Ok(n) => out.push(n),
                Err(e) => {
                    self.rollback().await;
                    return Err(e);
                }
            }
        }
        if let Err(e) = self.exec(b"COMMIT").await {
            self.rollback().await;
            return Err(e);
        }
        Ok(out)
    }
}

fn cell(r: &Row, i: usize) -> &[u8] {
    r.get(i).and_then(|v| v.as_deref()).unwrap_or_default()
}

fn num(r: &Row, i: usize) -> Option<i64> {
    std::str::from_utf8(r.get(i)?.as_deref()?)
        .ok()?
        .parse()
        .ok()
}

/// `CONVERT(X'…' USING utf8mb4)`: a UTF-8 name compared with information_schema.
fn utf8(b: &[u8]) -> String {
    format!("CONVERT({} USING utf8mb4)", catalog::hex(b))
}

/// What the task needs of a table: its declaration, or why it leaves the table alone.
enum TableFacts {
    Applies(Attributes),
    /// Not to be worked (dropped, no longer an HBase table, nothing declared, disabled, no
    /// (K, Q, T) primary key): the reason, for the task's RET_CODE.
    Skip(&'static str),
}

/// Reads a table's marker and definition (the catalog account's view).
async fn table_facts(
    c: &mut Conn,
    shared: &Shared,
    cfg: &Config,
    schema: &[u8],
    name: &[u8],
) -> Result<TableFacts, String> {
    let sql = format!(
        "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
        utf8(schema),
        utf8(name)
    );
    let rows = c.rows(&sql).await?;
    let Some(r) = rows.first() else {
        return Ok(TableFacts::Skip("OB_TABLE_NOT_EXIST"));
    };
    let Some((m, _)) = Marker::find(cell(r, 0)) else {
        return Ok(TableFacts::Skip("OB_NOT_HBASE_TABLE"));
    };
    let def = match shared.definitions.get(&m.ddl_id) {
        Some(d) => d,
        None => {
            let cat = Catalog {
                schema: &cfg.hbase.catalog_schema,
            };
            let rows = c.rows(&cat.ddl(&m.ddl_id)).await?;
            let Some(ddl) = rows.first().map(|r| cell(r, 0).to_vec()) else {
                return Ok(TableFacts::Skip("OB_NO_DEFINITION"));
            };
            if marker::ddl_id(&ddl) != m.ddl_id {
                return Ok(TableFacts::Skip("OB_NO_DEFINITION"));
            }
            let Ok(Some(Statement::CreateTable(table))) = ddl::parse(&ddl) else {
                return Ok(TableFacts::Skip("OB_NO_DEFINITION"));
            };
            let d = Arc::new(catalog::Definition { ddl, table: *table });
            shared.definitions.put(m.ddl_id.clone(), d.clone());
            d
        }
    };
    let pk_ok = def.table.primary_key.as_ref().is_some_and(|pk| {
        pk.len() == 3
            && pk
                .iter()
                .zip(["K", "Q", "T"])
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    });
    if !pk_ok {
        return Ok(TableFacts::Skip("OB_NOT_KQT_PRIMARY_KEY"));
    }
    let attrs = def
        .table
        .option("KV_ATTRIBUTES")
        .map(|o| Attributes::parse(&o.value))
        .unwrap_or_default();
    if attrs.disabled {
        return Ok(TableFacts::Skip("OB_TTL_DISABLED"));
    }
    if !attrs.applies() {
        return Ok(TableFacts::Skip("OB_TTL_NOT_DECLARED"));
    }
    Ok(TableFacts::Applies(attrs))
}

/// The table's partitions ('' for none), in their order.
async fn partitions(c: &mut Conn, schema: &[u8], name: &[u8]) -> Result<Vec<String>, String> {
    let sql = format!(
        "SELECT PARTITION_NAME FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = {} \
         AND TABLE_NAME = {} ORDER BY PARTITION_ORDINAL_POSITION",
        utf8(schema),
        utf8(name)
    );
    let rows = c.rows(&sql).await?;
    let mut out: Vec<String> = rows
        .iter()
        .filter_map(|r| r.first().cloned().flatten())
        .map(|p| String::from_utf8_lossy(&p).into_owned())
        .collect();
    out.dedup();
    if out.is_empty() {
        out.push(String::new());
    }
    Ok(out)
}

/// Whether `schema` is one of `hbase.databases` (empty: all), compared as the backend does.
fn covered(cfg: &Config, schema: &[u8], names_ci: bool) -> bool {
    let dbs = &cfg.hbase.databases;
    dbs.is_empty()
        || dbs
            .iter()
            .any(|d| marker::fold(d.as_bytes(), names_ci) == marker::fold(schema, names_ci))
}

/// Creates tasks for these tables (those the rule applies to) in one statement: how many.
async fn create_tasks(
    c: &mut Conn,
    shared: &Shared,
    cfg: &Config,
    tables: &[(Vec<u8>, Vec<u8>)],
    trigger: &str,
    now_ms: i64,
) -> Result<u64, String> {
    let mut parts = Vec::new();
    for (schema, name) in tables {
        if let TableFacts::Applies(_) = table_facts(c, shared, cfg, schema, name).await? {
            for p in partitions(c, schema, name).await? {
                parts.push((schema, name, p));
            }
        }
    }
    let tasks: Vec<NewTask> = parts
        .iter()
        .map(|(s, n, p)| NewTask {
            schema: s,
            name: n,
            partition: p,
        })
        .collect();
    let tables = TaskTables {
        schema: &cfg.hbase.catalog_schema,
    };
    match tables.insert(&tasks, trigger, now_ms) {
        Some(sql) => c.exec(&sql).await,
        None => Ok(0),
    }
}

async fn backend_now(c: &mut Conn) -> Result<i64, String> {
    let rows = c.rows(&format!("SELECT {NOW_MS}")).await?;
    rows.first()
        .and_then(|r| num(r, 0))
        .ok_or_else(|| "the backend's clock did not read".to_string())
}

/// The catalog's task tables, and the status views where asked.
async fn ensure(c: &mut Conn, cfg: &Config, flavor: Flavor) -> Result<(), String> {
    let t = TaskTables {
        schema: &cfg.hbase.catalog_schema,
    };
    for s in t.ensure() {
        c.exec(s.as_bytes()).await?;
    }
    if cfg.ttl.status_views {
        for s in t.views(flavor == Flavor::MySqlFamily) {
            if let Err(e) = c.exec(s.as_bytes()).await {
                warn!(error = %e, "the TTL status views could not be created (ttl.status_views)");
                break;
            }
        }
    }
    Ok(())
}

async fn detect(c: &mut Conn, cfg: &Config) -> Result<(Flavor, bool), String> {
    let rows = c
        .rows("SELECT CONCAT(VERSION(), ' ', @@version_comment), @@lower_case_table_names")
        .await?;
    let r = rows.first().cloned().unwrap_or_default();
    let flavor = Flavor::detect(cfg.hbase.backend_kind, cell(&r, 0));
    Ok((flavor, cell(&r, 1) != b"0"))
}

/// Carries out a TTL statement for a session (`tables`: the HBase tables the user can see, in
/// `hbase.databases`). Runs on a connection of its own.
pub async fn command(
    shared: &Shared,
    cfg: &Config,
    cmd: Command,
    tables: Vec<(Vec<u8>, Vec<u8>)>,
) -> Result<u64, ErrorInfo> {
    if !cfg.ttl.enabled {
        return Err(ErrorInfo::new(
            ER_TTL_NOT_ENABLE,
            "HY000",
            "TTL feature is not enabled (obkv-proxy: ttl.enabled = false)",
        ));
    }
    if cfg.hbase.catalog_user.is_empty() {
        return Err(ErrorInfo::new(
            ER_TTL_NOT_ENABLE,
            "HY000",
            "TTL feature is not enabled (obkv-proxy runs the TTL task as hbase.catalog_user, which is not set)",
        ));
    }
    let internal = |e: String| ErrorInfo::internal(&format!("TTL: {e}"));
    let mut c = Conn::open(cfg, shared).await.map_err(internal)?;
    let (flavor, _) = detect(&mut c, cfg).await.map_err(internal)?;
    ensure(&mut c, cfg, flavor).await.map_err(internal)?;
    let t = TaskTables {
        schema: &cfg.hbase.catalog_schema,
    };
    let not_allowed = |s: &str| {
        ErrorInfo::new(
            ER_TTL_CMD_NOT_ALLOWED,
            "HY000",
            format!("TTL command is not allowed, current TTL status is '{s}'"),
        )
    };
    let none = || {
        ErrorInfo::new(
            ER_TTL_NO_TASK_RUNNING,
            "HY000",
            "No TTL task is running, please try trigger a new TTL task",
        )
    };
    let current = |rows: &[Row]| {
        rows.first()
            .map(|r| String::from_utf8_lossy(cell(r, 0)).into_owned())
    };
    let done = match cmd {
        Command::Trigger => {
            c.exec(b"START TRANSACTION").await.map_err(internal)?;
            let rows = match c.rows(&t.any_task()).await {
                Ok(r) => r,
                Err(e) => {
                    c.rollback().await;
                    return Err(internal(e));
                }
            };
            if let Some(s) = current(&rows) {
                c.rollback().await;
                return Err(not_allowed(&s));
            }
            let made = async {
                let now = backend_now(&mut c).await?;
                let n = create_tasks(&mut c, shared, cfg, &tables, "USER", now).await?;
                c.exec(b"COMMIT").await?;
                Ok::<u64, String>(n)
            }
            .await;
            match made {
                Ok(n) => {
                    info!(tasks = n, "TTL task triggered (ALTER SYSTEM TRIGGER TTL)");
                    n
                }
                Err(e) => {
                    c.rollback().await;
                    return Err(internal(e));
                }
            }
        }
        Command::Suspend | Command::Resume => {
            let (from, to): (&[&str], &str) = if cmd == Command::Suspend {
                (&[status::PREPARED, status::RUNNING], status::PENDING)
            } else {
                (&[status::PENDING], status::RUNNING)
            };
            let n = c
                .exec(t.set_status(from, to).as_bytes())
                .await
                .map_err(internal)?;
            if n == 0 {
                let rows = c.rows(&t.any_task()).await.map_err(internal)?;
                return Err(match current(&rows) {
                    Some(s) => not_allowed(&s),
                    None => none(),
                });
            }
            n
        }
        Command::Cancel => {
            let now = backend_now(&mut c).await.map_err(internal)?;
            let [a, b] = t.end(
                None,
                status::CANCELED,
                "OB_CANCELED",
                Counts::default(),
                now,
            );
            // the task rows locked first: a batch finishing one of them meanwhile waits
            let n = c
                .transaction(&[t.any_task().into_bytes(), a.into_bytes(), b.into_bytes()])
                .await
                .map_err(internal)?;
            if n.get(2).copied().unwrap_or(0) == 0 {
                return Err(none());
            }
            n.get(2).copied().unwrap_or(0)
        }
    };
    shared.ttl.wake.notify_one();
    Ok(done)
}

/// The background task of one proxy (spawned by the server): wakes every `ttl.poll_ms` (or at
/// a trigger), creates the scheduled tasks inside the duty window, and works the open ones.
pub async fn run(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.clone();
    let mut conn: Option<Conn> = None;
    let mut ready: Option<(Flavor, bool)> = None;
    let mut reported = String::new();
    // the duty window's state, asked of the backend at most once a minute (each time it reads
    // every HBase table's declaration and the task history)
    let mut window_state: Option<(std::time::Instant, bool)> = None;
    loop {
        let cfg = shared.config();
        let poll = Duration::from_millis(cfg.ttl.poll_ms.max(1));
        tokio::select! {
            _ = shutdown.changed() => {}
            _ = shared.ttl.wake.notified() => {}
            _ = crate::timer::sleep(poll) => {}
        }
        if *shutdown.borrow() {
            return;
        }
        if !cfg.ttl.enabled || cfg.hbase.catalog_user.is_empty() {
            conn = None;
            ready = None;
            continue;
        }
        if conn.is_none() {
            match Conn::open(&cfg, &shared).await {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    if e != reported {
                        warn!(error = %e, "the TTL task cannot reach the backend");
                        reported = e;
                    }
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let round = async {
            let (flavor, names_ci) = match ready {
                Some(r) => r,
                None => {
                    let r = detect(c, &cfg).await?;
                    if r.0 != Flavor::OceanBase {
                        ensure(c, &cfg, r.0).await?;
                    } else {
                        info!("the backend is an OceanBase cluster: its own TTL task runs, the proxy's does not");
                    }
                    ready = Some(r);
                    r
                }
            };
            if flavor == Flavor::OceanBase {
                return Ok(());
            }
            let window = DutyWindow::parse(&cfg.ttl.duty_duration).ok().flatten();
            let inside = match (window, window_state) {
                (None, _) => false,
                (Some(_), Some((at, inside))) if at.elapsed() < Duration::from_secs(60) => inside,
                (Some(w), _) => {
                    let inside = schedule(c, &shared, &cfg, w, names_ci).await?;
                    window_state = Some((std::time::Instant::now(), inside));
                    inside
                }
            };
            work(c, &shared, &cfg, inside, &mut shutdown).await
        };
        match round.await {
            Ok(()) => reported.clear(),
            Err(e) => {
                shared.ttl.errors.fetch_add(1, Ordering::Relaxed);
                if e != reported {
                    warn!(error = %e, "TTL task round failed; it is tried again");
                    reported = e;
                }
                conn = None;
                ready = None;
            }
        }
    }
}

/// Inside the duty window: creates a scheduled task for each table the rule applies to whose
/// latest task started before today's window opened. Returns whether the window is open.
async fn schedule(
    c: &mut Conn,
    shared: &Shared,
    cfg: &Config,
    w: DutyWindow,
    names_ci: bool,
) -> Result<bool, String> {
    let rows = c
        .rows(&format!("SELECT TIME_TO_SEC(CURTIME()), {NOW_MS}"))
        .await?;
    let (Some(secs), Some(now)) = (
        rows.first().and_then(|r| num(r, 0)),
        rows.first().and_then(|r| num(r, 1)),
    ) else {
        return Err("the backend's clock did not read".into());
    };
    let secs = u32::try_from(secs).unwrap_or(0);
    if !w.contains(secs) {
        return Ok(false);
    }
    let opened = now.saturating_sub(i64::from(secs.saturating_sub(w.start)).saturating_mul(1000));
    let t = TaskTables {
        schema: &cfg.hbase.catalog_schema,
    };
    let last: HashMap<Vec<u8>, i64> = c
        .rows(&t.last_started())
        .await?
        .iter()
        .filter_map(|r| Some((cell(r, 0).to_vec(), num(r, 1)?)))
        .collect();
    let mut due = Vec::new();
    for r in c.rows(&catalog::marked_tables()).await? {
        let (Some(schema), Some(name)) =
            (marker::from_hex(cell(&r, 0)), marker::from_hex(cell(&r, 1)))
        else {
            continue;
        };
        if !covered(cfg, &schema, names_ci) {
            continue;
        }
        if last
            .get(&ttl::table_key(&schema, &name))
            .is_some_and(|&started| started >= opened)
        {
            continue;
        }
        due.push((schema, name));
    }
    if !due.is_empty() {
        let n = create_tasks(c, shared, cfg, &due, "PERIODIC", now).await?;
        if n > 0 {
            info!(tasks = n, "TTL task scheduled (ttl.duty_duration)");
        }
    }
    Ok(true)
}

/// A table in the task tables: key, schema, name.
type TableId = (Vec<u8>, Vec<u8>, Vec<u8>);

/// What one batch came to.
enum Step {
    More(Counts),
    Done(Counts),
    /// The task is no longer to be run (suspended, cancelled, finished elsewhere).
    Stopped,
    /// Another proxy holds the table now.
    Lost,
    /// The table no longer declares what the task applies (altered, disabled, dropped): the
    /// reason, for the tasks' RET_CODE.
    Ended(&'static str),
}

/// A backend error that ends one partition's task (its table or partition went, or the
/// account may not read or delete it), rather than the round: the others go on.
fn ends_the_task(e: &str) -> Option<u16> {
    let code: u16 = e.split(':').next()?.parse().ok()?;
    [
        er::BAD_TABLE_ERROR,
        er::BAD_FIELD_ERROR,
        er::TABLEACCESS_DENIED_ERROR,
        er::COLUMNACCESS_DENIED_ERROR,
        er::NO_SUCH_TABLE,
        er::VIEW_INVALID,
        er::UNKNOWN_PARTITION,
    ]
    .contains(&code)
    .then_some(code)
}

/// Works the open tasks, table by table, each under its lease.
async fn work(
    c: &mut Conn,
    shared: &Shared,
    cfg: &Config,
    window_open: bool,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
) -> Result<(), String> {
    let t = TaskTables {
        schema: &cfg.hbase.catalog_schema,
    };
    let open = c.rows(&t.open_tasks()).await?;
    // (table key, schema, name), partitions
    let mut tables: Vec<(TableId, Vec<String>)> = Vec::new();
    for r in &open {
        // a scheduled task works only inside the window
        if cell(r, 4) == b"PERIODIC" && !window_open {
            continue;
        }
        let key = cell(r, 0).to_vec();
        let part = String::from_utf8_lossy(cell(r, 3)).into_owned();
        match tables.last_mut() {
            Some(last) if last.0 .0 == key => last.1.push(part),
            _ => tables.push(((key, cell(r, 1).to_vec(), cell(r, 2).to_vec()), vec![part])),
        }
    }
    for ((key, schema, name), parts) in tables {
        if *shutdown.borrow() {
            return Ok(());
        }
        if !take_lease(c, &t, &key, &shared.ttl.holder, cfg.ttl.lease_ms).await? {
            continue;
        }
        let outcome =
            work_table(c, shared, cfg, &t, (&key, &schema, &name), &parts, shutdown).await;
        let _ = c
            .exec(t.lease_release(&key, &shared.ttl.holder).as_bytes())
            .await;
        outcome?;
    }
    Ok(())
}

async fn take_lease(
    c: &mut Conn,
    t: &TaskTables<'_>,
    key: &[u8],
    me: &str,
    lease_ms: u64,
) -> Result<bool, String> {
    let lease = i64::try_from(lease_ms).unwrap_or(i64::MAX);
    c.exec(b"START TRANSACTION").await?;
    let got = async {
        let rows = c.rows(&t.lease(key)).await?;
        match rows.first() {
            Some(r) => {
                let free = num(r, 1).unwrap_or(0) < num(r, 2).unwrap_or(0);
                if cell(r, 0) != me.as_bytes() && !free {
                    return Ok(false);
                }
                let now = num(r, 2).unwrap_or(0);
                c.exec(t.lease_take(key, me, now.saturating_add(lease)).as_bytes())
                    .await?;
            }
            None => {
                let now = backend_now(c).await?;
                c.exec(
                    t.lease_insert(key, me, now.saturating_add(lease))
                        .as_bytes(),
                )
                .await?;
            }
        }
        c.exec(b"COMMIT").await?;
        Ok::<bool, String>(true)
    }
    .await;
    match got {
        Ok(true) => Ok(true),
        Ok(false) => {
            c.rollback().await;
            Ok(false)
        }
        // another proxy inserted the lease first: not ours
        Err(e) if e.starts_with("1062") => {
            c.rollback().await;
            Ok(false)
        }
        Err(e) => {
            c.rollback().await;
            Err(e)
        }
    }
}

async fn work_table(
    c: &mut Conn,
    shared: &Shared,
    cfg: &Config,
    t: &TaskTables<'_>,
    (key, schema, name): (&[u8], &[u8], &[u8]),
    parts: &[String],
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
) -> Result<(), String> {
    let table = format!(
        "{}.{}",
        catalog::ident(&String::from_utf8_lossy(schema)),
        catalog::ident(&String::from_utf8_lossy(name))
    );
    let shown = format!(
        "{}.{}",
        String::from_utf8_lossy(schema),
        String::from_utf8_lossy(name)
    );
    match table_facts(c, shared, cfg, schema, name).await? {
        TableFacts::Applies(_) => {}
        TableFacts::Skip(why) => {
            // nothing to do for this table any more: its tasks end, saying why
            cancel_tasks(c, t, key, parts, why).await?;
            info!(table = %shown, reason = why, "TTL task ended without running");
            return Ok(());
        }
    }
    let mut total = Counts::default();
    let mut finished = 0usize;
    // the declaration as last read, and when (read again at most once a second)
    let mut declared: Option<(std::time::Instant, Attributes)> = None;
    for p in parts {
        let walk = Walk {
            table: &table,
            partition: (!p.is_empty()).then_some(p.as_str()),
            convention: cfg.hbase.timestamp,
        };
        loop {
            if *shutdown.borrow() {
                return Ok(());
            }
            let step = match batch(
                c,
                shared,
                cfg,
                t,
                (key, schema, name),
                p,
                &walk,
                &mut declared,
            )
            .await
            {
                Ok(s) => s,
                Err(e) => match ends_the_task(&e) {
                    Some(code) => {
                        // this partition's task cannot go on: it ends, saying why
                        warn!(table = %shown, partition = %p, error = %e, "TTL task ended by an error");
                        shared.ttl.errors.fetch_add(1, Ordering::Relaxed);
                        let ret = format!("ERROR {code}");
                        cancel_tasks(c, t, key, std::slice::from_ref(p), &ret).await?;
                        break;
                    }
                    None => return Err(e),
                },
            };
            let counts = match step {
                Step::More(n) | Step::Done(n) => n,
                Step::Stopped => break,
                Step::Lost => return Ok(()),
                Step::Ended(why) => {
                    // altered or disabled while running: what is left ends, saying why
                    cancel_tasks(c, t, key, parts, why).await?;
                    info!(table = %shown, reason = why, "TTL task ended: the table changed");
                    return Ok(());
                }
            };
            total.add(counts);
            let s = &shared.ttl;
            s.batches.fetch_add(1, Ordering::Relaxed);
            s.rows_scanned.fetch_add(counts.scanned, Ordering::Relaxed);
            s.rows_expired.fetch_add(counts.expired, Ordering::Relaxed);
            s.rows_versions
                .fetch_add(counts.versions, Ordering::Relaxed);
            if matches!(step, Step::Done(_)) {
                s.tasks_finished.fetch_add(1, Ordering::Relaxed);
                finished += 1;
                break;
            }
            // the rate: this batch's rows at `rows_per_second`
            if cfg.ttl.rows_per_second > 0 && counts.scanned > 0 {
                let ms = counts.scanned.saturating_mul(1000) / cfg.ttl.rows_per_second;
                let pause = crate::timer::sleep(Duration::from_millis(ms));
                tokio::select! {
                    _ = pause => {}
                    _ = shutdown.changed() => return Ok(()),
                }
            } else {
                tokio::task::yield_now().await;
            }
        }
    }
    if total.scanned == 0 && finished == 0 {
        // suspended or cancelled before anything was done
        return Ok(());
    }
    info!(
        table = %shown,
        partitions_finished = finished,
        partitions = parts.len(),
        scanned = total.scanned,
        ttl_deleted = total.expired,
        versions_deleted = total.versions,
        "TTL task run"
    );
    Ok(())
}

/// Ends these partitions' tasks (those still open) as CANCELED with `why` as RET_CODE.
async fn cancel_tasks(
    c: &mut Conn,
    t: &TaskTables<'_>,
    key: &[u8],
    parts: &[String],
    why: &str,
) -> Result<(), String> {
    let now = backend_now(c).await?;
    for p in parts {
        let [a, b] = t.end(
            Some((key, p)),
            status::CANCELED,
            why,
            Counts::default(),
            now,
        );
        c.transaction(&[a.into_bytes(), b.into_bytes()]).await?;
    }
    Ok(())
}

/// One batch of one partition's task, in its own transaction: the lease checked and renewed,
/// the task's position read, the next rows read (locked), the rule applied, the rows it says
/// to delete deleted, the position and counts written (or the task moved to the history).
#[allow(clippy::too_many_arguments)]
async fn batch(
    c: &mut Conn,
    shared: &Shared,
    cfg: &Config,
    t: &TaskTables<'_>,
    table: (&[u8], &[u8], &[u8]),
    part: &str,
    walk: &Walk<'_>,
    declared: &mut Option<(std::time::Instant, Attributes)>,
) -> Result<Step, String> {
    c.exec(b"START TRANSACTION").await?;
    match batch_in_txn(c, shared, cfg, t, table, part, walk, declared).await {
        // committed inside
        Ok(s @ (Step::More(_) | Step::Done(_))) => Ok(s),
        Ok(s) => {
            c.rollback().await;
            Ok(s)
        }
        Err(e) => {
            c.rollback().await;
            Err(e)
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn batch_in_txn(
    c: &mut Conn,
    shared: &Shared,
    cfg: &Config,
    t: &TaskTables<'_>,
    (key, schema, name): (&[u8], &[u8], &[u8]),
    part: &str,
    walk: &Walk<'_>,
    declared: &mut Option<(std::time::Instant, Attributes)>,
) -> Result<Step, String> {
    let me = shared.ttl.holder.as_str();
    let lease = c.rows(&t.lease(key)).await?;
    let Some(l) = lease.first() else {
        return Ok(Step::Lost);
    };
    if cell(l, 0) != me.as_bytes() {
        return Ok(Step::Lost);
    }
    let now = num(l, 2).ok_or("the backend's clock did not read")?;
    let lease_ms = i64::try_from(cfg.ttl.lease_ms).unwrap_or(i64::MAX);
    c.exec(
        t.lease_take(key, me, now.saturating_add(lease_ms))
            .as_bytes(),
    )
    .await?;
    let task = c.rows(&t.task(key, part)).await?;
    let Some(task) = task.first() else {
        return Ok(Step::Stopped);
    };
    if !matches!(cell(task, 0), b"PREPARED" | b"RUNNING") {
        return Ok(Step::Stopped);
    }
    let after = match (task.get(1), task.get(2), num(task, 3)) {
        (Some(Some(k)), Some(Some(q)), Some(t)) => Some(Position {
            k: k.clone(),
            q: q.clone(),
            t,
        }),
        _ => None,
    };
    let limit = cfg.ttl.batch_rows.max(1);
    let rows = c.rows(&walk.batch(after.as_ref(), limit)).await?;
    // the declaration as it is now, read after the rows are locked (an ALTER on MariaDB waits
    // for this transaction), at most once a second (reading information_schema every batch
    // cost seekdb's point gets their tail): a change or a "disable" applies within a second
    let attrs = match *declared {
        Some((at, a)) if at.elapsed() < Duration::from_secs(1) => a,
        _ => match table_facts(c, shared, cfg, schema, name).await? {
            TableFacts::Applies(a) => {
                *declared = Some((std::time::Instant::now(), a));
                a
            }
            TableFacts::Skip(why) => return Ok(Step::Ended(why)),
        },
    };
    let mut positions = Vec::with_capacity(rows.len());
    for r in &rows {
        let (Some(Some(k)), Some(Some(q)), Some(tv)) = (r.first(), r.get(1), num(r, 2)) else {
            return Err("a row without K, Q or T".into());
        };
        positions.push(Position {
            k: k.clone(),
            q: q.clone(),
            t: tv,
        });
    }
    // a walk that resumes inside a cell counts the versions newer than its first row
    let mut ranks = match (&after, positions.first()) {
        (Some(a), Some(first)) if a.k == first.k && a.q == first.q => {
            let n = c.rows(&walk.newer_versions(first)).await?;
            let newer = n.first().and_then(|r| num(r, 0)).unwrap_or(0);
            Ranks::resume(&first.k, &first.q, u64::try_from(newer).unwrap_or(0))
        }
        _ => Ranks::default(),
    };
    let mut counts = Counts {
        scanned: positions.len() as u64,
        ..Counts::default()
    };
    let mut doomed = Vec::new();
    for p in &positions {
        let rank = ranks.next(&p.k, &p.q);
        match attrs.verdict(walk.convention, rank, p.t, now) {
            Verdict::Keep => {}
            Verdict::Versions => {
                counts.versions += 1;
                doomed.push(p);
            }
            Verdict::Expired => {
                counts.expired += 1;
                doomed.push(p);
            }
        }
    }
    if let Some(del) = walk.delete(&doomed) {
        let n = c.exec(&del).await?;
        if n != doomed.len() as u64 {
            return Err(format!(
                "a batch deleted {n} rows of the {} it locked",
                doomed.len()
            ));
        }
    }
    let done = positions.len() < limit;
    if done {
        let [a, b] = t.end(
            Some((key, part)),
            status::FINISHED,
            "OB_SUCCESS",
            counts,
            now,
        );
        c.exec(a.as_bytes()).await?;
        c.exec(b.as_bytes()).await?;
    } else if let Some(last) = positions.last() {
        c.exec(t.progress(key, part, last, counts, now).as_bytes())
            .await?;
    }
    c.exec(b"COMMIT").await?;
    Ok(if done {
        Step::Done(counts)
    } else {
        Step::More(counts)
    })
}
