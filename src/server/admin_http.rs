//! The admin HTTP listener (`admin.listen`, loopback by default): `GET /metrics` (Prometheus
//! text), `/livez` (the process serves) and `/readyz` (the backend answers and, with a catalog
//! account, the catalog can be read; 503 and the reason otherwise), open to every caller and
//! free of rowkeys; and the rowkey advisor's `/advisor` page and `/advisor/sample`, whose
//! rowkeys only a caller the backend authorises sees (`admin.rowkeys`): HTTP Basic with a
//! database account, with which the proxy logs in to the backend and asks it, as SHOW OBKV
//! ADVICE does, which tables the account may see and read. Without credentials the page shows
//! counts and findings with every rowkey hidden, and the sample is refused (401).
//!
//! A small HTTP/1.x responder of its own (docs/DESIGN.md, "The admin listener"): GET and HEAD of
//! three paths, one request per connection, `Connection: close`. What a hostile client can make
//! it hold is bounded: at most `MAX_CONNECTIONS` connections, a request head of at most
//! `MAX_HEAD` bytes, read within `HEAD_TIMEOUT`; the body it sends is never read.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tracing::{debug, warn};

use crate::admin::prometheus::{self, Extra};
use crate::shared::Shared;

const MAX_CONNECTIONS: usize = 64;
/// Backend logins for credentials checked at once (each request with credentials logs in).
const MAX_LOGINS: usize = 4;
/// A credentials check (login and the grant probes) must finish within this.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_HEAD: usize = 8 * 1024;
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// A readiness answer is reused for this long (a load balancer polling every second costs the
/// backend one probe a second at most).
const READY_FOR: Duration = Duration::from_secs(1);
/// A backend login by a session this recently proves the backend answers: no probe then.
const RECENT_LOGIN: Duration = Duration::from_secs(10);

/// Serves the admin listener until `stop` turns true.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let logins = Arc::new(Semaphore::new(MAX_LOGINS));
    let ready = Arc::new(Mutex::new(None::<(Instant, Result<(), String>)>));
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => return,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                warn!("admin listener: accept failed: {e}");
                crate::timer::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(tcp); // too many at once: closed
            continue;
        };
        let (shared, ready, logins) = (shared.clone(), ready.clone(), logins.clone());
        tokio::spawn(async move {
            if let Err(e) = answer(tcp, &shared, &ready, &logins).await {
                debug!(%peer, "admin request: {e}");
            }
            drop(slot);
        });
    }
}

/// Reads one request head and answers it.
async fn answer(
    mut tcp: TcpStream,
    shared: &Shared,
    ready: &Mutex<Option<(Instant, Result<(), String>)>>,
    logins: &Semaphore,
) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let read = crate::timer::timeout(HEAD_TIMEOUT, async {
        let mut buf = [0u8; 1024];
        loop {
            let n = tcp.read(&mut buf).await?;
            if n == 0 {
                return Ok::<bool, std::io::Error>(false);
            }
            head.extend_from_slice(buf.get(..n).unwrap_or_default());
            if memchr::memmem::find(&head, b"\r\n\r\n").is_some()
                || memchr::memmem::find(&head, b"\n\n").is_some()
            {
                return Ok(true);
            }
            if head.len() > MAX_HEAD {
                return Ok(false);
            }
        }
    })
    .await;
    let complete = matches!(read, Ok(Ok(true)));
    let (status, content_type, body, head_only) = if !complete {
        (400, "text/plain", "bad request\n".to_string(), false)
    } else {
        route(&head, shared, ready, logins).await
    };
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Service Unavailable",
    };
    let challenge = if status == 401 {
        "WWW-Authenticate: Basic realm=\"obkv-proxy advisor: a database account\", charset=\"UTF-8\"\r\n"
    } else {
        ""
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{challenge}Connection: close\r\nCache-Control: no-store\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(body.as_bytes());
    }
    tcp.write_all(&out).await?;
    tcp.shutdown().await
}

/// `table=DB.TABLE` from a request target's query (percent-decoded; the first dot splits).
fn query_table(target: &[u8]) -> Option<(String, String)> {
    let query = target.splitn(2, |&b| b == b'?').nth(1)?;
    let value = query
        .split(|&b| b == b'&')
        .find_map(|kv| kv.strip_prefix(b"table="))?;
    let decoded = percent_decode(value)?;
    let text = String::from_utf8(decoded).ok()?;
    let (db, t) = text.split_once('.')?;
    Some((db.to_string(), t.to_string()))
}

fn percent_decode(v: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while let Some(&b) = v.get(i) {
        match b {
            b'%' => {
                let hex = std::str::from_utf8(v.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(out)
}

/// Who asks for the advisor's views.
#[derive(Debug, PartialEq, Eq)]
enum Viewer {
    /// No credentials (or `admin.rowkeys = "off"`): counts and findings, no rowkey.
    Anonymous,
    /// A database account the backend accepted: the advisor's tables the backend shows it
    /// (`visible`), and those it may read (`readable`).
    Account {
        visible: Vec<(String, String)>,
        readable: Vec<(String, String)>,
    },
}

/// An `Authorization` header that is not HTTP Basic credentials one can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadCredentials;

/// The credentials of an `Authorization: Basic …` header: (user, password). None without one;
/// Err for another scheme or one that does not decode.
pub fn basic_credentials(head: &[u8]) -> Result<Option<(String, String)>, BadCredentials> {
    use base64::Engine;
    let Some(value) = head.split(|&b| b == b'\n').find_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':')?;
        let (name, value) = line.split_at(colon);
        name.eq_ignore_ascii_case(b"authorization")
            .then(|| value.get(1..).unwrap_or_default().trim_ascii())
    }) else {
        return Ok(None);
    };
    let Some(encoded) = value
        .get(..6)
        .filter(|s| s.eq_ignore_ascii_case(b"basic "))
        .and_then(|_| value.get(6..))
    else {
        return Err(BadCredentials);
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim_ascii())
        .map_err(|_| BadCredentials)?;
    let text = String::from_utf8(decoded).map_err(|_| BadCredentials)?;
    let (user, password) = text.split_once(':').ok_or(BadCredentials)?;
    Ok(Some((user.to_string(), password.to_string())))
}

/// The viewer of a request: anonymous, an account the backend accepted (with what it may see),
/// or the refusal to answer with (401 for credentials the backend refused or that do not read,
/// 503 when the backend cannot be asked).
async fn viewer(head: &[u8], shared: &Shared, logins: &Semaphore) -> Result<Viewer, (u16, String)> {
    if shared.config().admin.rowkeys == crate::config::RowkeyViews::Off {
        return Ok(Viewer::Anonymous);
    }
    let (user, password) = match basic_credentials(head) {
        Ok(Some(c)) => c,
        Ok(None) => return Ok(Viewer::Anonymous),
        Err(BadCredentials) => {
            return Err((
                401,
                "credentials: HTTP Basic with a database account\n".into(),
            ))
        }
    };
    let Ok(_slot) = logins.acquire().await else {
        return Err((503, "not now\n".into()));
    };
    match crate::timer::timeout(LOGIN_TIMEOUT, account(shared, &user, &password)).await {
        Ok(r) => r,
        Err(_) => Err((503, "the backend did not answer in time\n".into())),
    }
}

/// Logs in to the backend as `user` and asks which of the advisor's tables it shows that
/// account and which it may read (the probes SHOW OBKV ADVICE runs as the session's user).
async fn account(shared: &Shared, user: &str, password: &str) -> Result<Viewer, (u16, String)> {
    use crate::backend::{self, BackendError, LoginSpec, QueryResult};
    let cfg = shared.config();
    let spec = LoginSpec {
        user: user.to_string(),
        password: password.to_string(),
        caps: crate::protocol::constants::cap::OWN_LOGIN,
        ext_caps: 0,
        charset: crate::protocol::constants::CHARSET_UTF8MB4_GENERAL_CI,
        database: None,
    };
    let addr = &cfg.backend.address;
    let mut conn = match backend::login(
        addr,
        cfg.connect_timeout(),
        &spec,
        shared.backend_tls.as_ref(),
    )
    .await
    {
        Ok(c) => c,
        Err(BackendError::Refused(_)) => {
            debug!(user, "admin listener: the backend refused the credentials");
            return Err((401, "the database refused these credentials\n".into()));
        }
        Err(e) => return Err((503, format!("backend {addr}: {e}\n"))),
    };
    let (mut visible, mut readable) = (Vec::new(), Vec::new());
    for (db, name) in crate::admin::advisor::tables() {
        let listed = crate::hbase::catalog::table_partitioning(db.as_bytes(), name.as_bytes());
        let shown = match backend::query(&mut conn.stream, conn.caps, listed.as_bytes()).await {
            Ok((QueryResult::Rows(r), _)) => !r.is_empty(),
            Ok(_) => false,
            Err(e) => return Err((503, format!("backend {addr}: {e}\n"))),
        };
        if !shown {
            continue;
        }
        let probe = crate::hbase::catalog::readable_probe(&db, &name);
        match backend::query(&mut conn.stream, conn.caps, probe.as_bytes()).await {
            Ok((QueryResult::Err(_), _)) => {}
            Ok(_) => readable.push((db.clone(), name.clone())),
            Err(e) => return Err((503, format!("backend {addr}: {e}\n"))),
        }
        visible.push((db, name));
    }
    let _ = conn
        .stream
        .send_command(&[crate::protocol::constants::com::QUIT])
        .await;
    Ok(Viewer::Account { visible, readable })
}

/// (status, content type, body, HEAD: no body).
async fn route(
    head: &[u8],
    shared: &Shared,
    ready: &Mutex<Option<(Instant, Result<(), String>)>>,
    logins: &Semaphore,
) -> (u16, &'static str, String, bool) {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut parts = line
        .split(|&b| b == b' ')
        .filter(|p| !p.is_empty())
        .map(|p| p.strip_suffix(b"\r").unwrap_or(p));
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let head_only = method == b"HEAD";
    if method != b"GET" && !head_only {
        return (405, "text/plain", "only GET and HEAD\n".into(), false);
    }
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    match path {
        b"/metrics" => (
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            prometheus::render(&shared.stats, &extras(shared))
                + &prometheus::lending(&shared.lending),
            head_only,
        ),
        b"/livez" => (200, "text/plain", "ok\n".into(), head_only),
        b"/readyz" => match readiness(shared, ready).await {
            Ok(()) => (200, "text/plain", "ready\n".into(), head_only),
            Err(why) => (503, "text/plain", format!("not ready: {why}\n"), head_only),
        },
        b"/advisor" => {
            crate::admin::advisor::sync(Duration::from_secs(2)).await;
            let who = match viewer(head, shared, logins).await {
                Ok(v) => v,
                Err((status, why)) => return (status, "text/plain", why, head_only),
            };
            let only = query_table(target);
            let want = |db: &str, t: &str| only.as_ref().is_none_or(|(d, n)| d == db && n == t);
            let has = |list: &[(String, String)], db: &str, t: &str| {
                list.iter().any(|(d, n)| d == db && n == t)
            };
            let (reports, note) = match &who {
                Viewer::Anonymous => (
                    crate::admin::advisor::report(want, |_, _| false, true),
                    match shared.config().admin.rowkeys {
                        crate::config::RowkeyViews::Off => "Rowkeys are hidden here (admin.rowkeys = \"off\"); SHOW OBKV ADVICE through the proxy shows them to users who may read the table.",
                        crate::config::RowkeyViews::Credentials => "Rowkeys are hidden: sign in with a database account (HTTP Basic) to see those of the tables it may read.",
                    },
                ),
                Viewer::Account { visible, readable } => (
                    crate::admin::advisor::report(
                        |db, t| want(db, t) && has(visible, db, t),
                        |db, t| has(readable, db, t),
                        true,
                    ),
                    "Tables the backend shows this account; rowkeys of those it may read.",
                ),
            };
            (
                200,
                "text/html; charset=utf-8",
                crate::admin::page::advisor_page(&reports, note),
                head_only,
            )
        }
        b"/advisor/sample" => {
            crate::admin::advisor::sync(Duration::from_secs(2)).await;
            let Some((db, t)) = query_table(target) else {
                return (
                    404,
                    "text/plain",
                    "/advisor/sample?table=DB.TABLE\n".into(),
                    head_only,
                );
            };
            match viewer(head, shared, logins).await {
                Err((status, why)) => (status, "text/plain", why, head_only),
                Ok(Viewer::Anonymous) => match shared.config().admin.rowkeys {
                    crate::config::RowkeyViews::Off => (
                        403,
                        "text/plain",
                        "rowkeys are not shown on the admin listener (admin.rowkeys = \"off\")\n".into(),
                        head_only,
                    ),
                    crate::config::RowkeyViews::Credentials => (
                        401,
                        "text/plain",
                        "the sample is rowkeys: sign in with a database account that may read the table (HTTP Basic)\n".into(),
                        head_only,
                    ),
                },
                Ok(Viewer::Account { readable, .. })
                    if !readable.iter().any(|(d, n)| *d == db && *n == t) =>
                {
                    (
                        403,
                        "text/plain",
                        "this account may not read that table (or the advisor keeps no such table)\n".into(),
                        head_only,
                    )
                }
                Ok(Viewer::Account { .. }) => match crate::admin::advisor::sample(&db, &t) {
                    Some(keys) => (200, "text/plain", keys, head_only),
                    None => (
                        404,
                        "text/plain",
                        "no such table in the advisor: /advisor/sample?table=DB.TABLE\n".into(),
                        head_only,
                    ),
                },
            }
        }
        _ => (
            404,
            "text/plain",
            "not found: /metrics, /livez, /readyz, /advisor, /advisor/sample?table=DB.TABLE\n"
                .into(),
            head_only,
        ),
    }
}

/// Gauges read at scrape time.
fn extras(shared: &Shared) -> Vec<Extra> {
    let c = &shared.rewrite_counters;
    vec![
        Extra {
            name: "pool_idle_connections",
            help: "Idle backend connections in the pool (proxy auth mode).",
            kind: "gauge",
            value: shared.pool.idle_count() as f64,
        },
        Extra {
            name: "prefix_rewrites_total",
            help: "Prefix scans rewritten to one partition.",
            kind: "counter",
            value: c.rewritten.load(Relaxed) as f64,
        },
        Extra {
            name: "prefix_rewrites_declined_total",
            help: "Prefix scans the rewriter left as they were (a reason is logged at debug).",
            kind: "counter",
            value: c.declined.load(Relaxed) as f64,
        },
        Extra {
            name: "prefix_rewrites_unreadable_total",
            help: "Statements on HBase tables the rewriter could not read.",
            kind: "counter",
            value: c.unreadable.load(Relaxed) as f64,
        },
        Extra {
            name: "ttl_rows_scanned_total",
            help: "Rows the proxy's TTL task read (backends without a TTL task of their own).",
            kind: "counter",
            value: shared.ttl.rows_scanned.load(Relaxed) as f64,
        },
        Extra {
            name: "ttl_rows_deleted_expired_total",
            help: "Cells the TTL task deleted for being older than now - TimeToLive.",
            kind: "counter",
            value: shared.ttl.rows_expired.load(Relaxed) as f64,
        },
        Extra {
            name: "ttl_rows_deleted_versions_total",
            help: "Cells the TTL task deleted for being beyond the newest MaxVersions of their (K, Q).",
            kind: "counter",
            value: shared.ttl.rows_versions.load(Relaxed) as f64,
        },
        Extra {
            name: "ttl_batches_total",
            help: "Batches (short transactions) the TTL task committed.",
            kind: "counter",
            value: shared.ttl.batches.load(Relaxed) as f64,
        },
        Extra {
            name: "ttl_tasks_finished_total",
            help: "TTL tasks (one per partition) this proxy finished.",
            kind: "counter",
            value: shared.ttl.tasks_finished.load(Relaxed) as f64,
        },
        Extra {
            name: "ttl_errors_total",
            help: "TTL task rounds that failed (the backend refused or went; tried again).",
            kind: "counter",
            value: shared.ttl.errors.load(Relaxed) as f64,
        },
        Extra {
            name: "config_reloads_total",
            help: "Configuration reloads applied (SIGHUP).",
            kind: "counter",
            value: shared.stats.config_reloads.load(Relaxed) as f64,
        },
        Extra {
            name: "config_reload_failures_total",
            help: "Configuration reloads refused (the file did not read or check; the old configuration stays).",
            kind: "counter",
            value: shared.stats.config_reload_failures.load(Relaxed) as f64,
        },
    ]
}

/// Whether the proxy can serve: the backend answers (a session logged in within the last
/// `RECENT_LOGIN`, or a probe reads its greeting now) and, with a catalog account, the catalog
/// can be read. The answer is reused for `READY_FOR`.
async fn readiness(
    shared: &Shared,
    cache: &Mutex<Option<(Instant, Result<(), String>)>>,
) -> Result<(), String> {
    if let Some((at, r)) = cache.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        if at.elapsed() < READY_FOR {
            return r.clone();
        }
    }
    let r = probe(shared).await;
    *cache.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), r.clone()));
    r
}

async fn probe(shared: &Shared) -> Result<(), String> {
    if shared.catalog_conn.is_some() {
        let sql = format!(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{}'",
            shared.config().hbase.catalog_schema.replace('\'', "''")
        );
        return match shared.catalog_query(sql.as_bytes()).await {
            Some(Ok(_)) => Ok(()),
            Some(Err(e)) => Err(format!("the catalog cannot be read: {e}")),
            None => Ok(()),
        };
    }
    if shared.stats.backend_login_within(RECENT_LOGIN) {
        return Ok(());
    }
    let addr = &shared.config().backend.address;
    let wait = shared.config().connect_timeout();
    let mut s = crate::backend::connect(addr, wait)
        .await
        .map_err(|e| format!("backend {addr}: {e}"))?;
    crate::backend::read_greeting_within(&mut s, wait)
        .await
        .map_err(|e| format!("backend {addr}: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_read_from_the_head() {
        let head =
            b"GET /advisor HTTP/1.1\r\nHost: x\r\nauthorization: Basic cm9vdDpwYTpzcw==\r\n\r\n";
        assert_eq!(
            basic_credentials(head),
            Ok(Some(("root".into(), "pa:ss".into())))
        );
        assert_eq!(basic_credentials(b"GET / HTTP/1.1\r\n\r\n"), Ok(None));
        for bad in [
            &b"GET / HTTP/1.1\r\nAuthorization: Bearer abc\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nAuthorization: Basic !!!\r\n\r\n",
            b"GET / HTTP/1.1\r\nAuthorization: Basic cm9vdA==\r\n\r\n",
        ] {
            assert_eq!(basic_credentials(bad), Err(BadCredentials));
        }
    }
}
