//! The proxy's own backend connection for catalog work, logged in with the catalog account
//! (`hbase.catalog_user`): catalog statements never run inside a client's transaction, take
//! no lock a client's session holds, and commit on their own (autocommit). One connection per
//! process, used one statement at a time; a broken one is replaced at the next use.

use std::time::Duration;

use tokio::sync::Mutex;
use tracing::{info, warn};

use super::{login, query, LoggedIn, LoginSpec, QueryError, QueryResult};
use crate::protocol::constants::{cap, CHARSET_UTF8MB4_GENERAL_CI};
use crate::tls::BackendTls;

pub struct CatalogConn {
    spec: LoginSpec,
    conn: Mutex<Option<LoggedIn>>,
}

impl CatalogConn {
    pub fn new(user: &str, password: &str) -> CatalogConn {
        CatalogConn {
            spec: LoginSpec {
                user: user.to_string(),
                password: password.to_string(),
                caps: cap::OWN_LOGIN,
                ext_caps: 0,
                charset: CHARSET_UTF8MB4_GENERAL_CI,
                database: None,
            },
            conn: Mutex::new(None),
        }
    }

    /// Runs one statement (autocommit) and reads its whole answer within `timeout`. A
    /// connection that fails is dropped and the statement tried once more on a new one (every
    /// catalog statement can be repeated: reads, INSERT IGNORE, DELETE by key).
    pub async fn query(
        &self,
        addr: &str,
        timeout: Duration,
        tls: Option<&BackendTls>,
        sql: &[u8],
    ) -> Result<QueryResult, String> {
        let mut slot = self.conn.lock().await;
        let mut last = String::new();
        for _ in 0..2 {
            if slot.is_none() {
                match login(addr, timeout, &self.spec, tls).await {
                    Ok(c) => {
                        info!(user = %self.spec.user, "catalog connection opened");
                        *slot = Some(c);
                    }
                    Err(e) => {
                        last = format!("cannot log in as the catalog account: {e}");
                        continue;
                    }
                }
            }
            let Some(c) = slot.as_mut() else { continue };
            match crate::timer::timeout(timeout, query(&mut c.stream, c.caps, sql)).await {
                Ok(Ok((result, _))) => return Ok(result),
                Ok(Err(QueryError::Io(e))) => last = format!("catalog connection lost: {e}"),
                Ok(Err(QueryError::Framing(what))) => last = format!("catalog connection: {what}"),
                Err(_) => last = "catalog statement timed out".into(),
            }
            warn!("{last}");
            *slot = None;
        }
        Err(last)
    }
}
