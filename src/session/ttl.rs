//! `ALTER SYSTEM {TRIGGER|SUSPEND|RESUME|CANCEL} TTL`: forwarded to an OceanBase cluster (its
//! own TTL task answers), carried out by the proxy's task elsewhere (`crate::ttl`).

use super::catalog::cell;
use super::{End, Session};
use crate::hbase::backend::Flavor;
use crate::hbase::marker;
use crate::protocol::response::{ResponseKind, Summary};

impl Session {
    pub(super) async fn answer_ttl(
        &mut self,
        cmd: crate::hbase::ttl::Command,
        kind: ResponseKind,
    ) -> Result<Option<Summary>, End> {
        if self.flavor().await? == Flavor::OceanBase {
            return self.forward(kind).await.map(Some);
        }
        crate::admin::bump(&self.shared.stats.answered_locally);
        // a trigger covers the HBase tables this user can see (the backend's grants), in
        // `hbase.databases`
        let mut tables = Vec::new();
        if cmd == crate::hbase::ttl::Command::Trigger {
            let rows = match self.rows(&crate::hbase::catalog::marked_tables()).await? {
                Ok(r) => r,
                Err(packet) => {
                    self.answer_raw(&packet).await?;
                    return Ok(None);
                }
            };
            let databases = self.shared.hbase_databases.clone();
            for r in &rows {
                let (Some(db), Some(name)) =
                    (marker::from_hex(cell(r, 0)), marker::from_hex(cell(r, 1)))
                else {
                    continue;
                };
                // compared as the backend compares names
                let ci = self.names_ci;
                if !databases.is_empty()
                    && !databases
                        .iter()
                        .any(|d| marker::fold(d.as_bytes(), ci) == marker::fold(&db, ci))
                {
                    continue;
                }
                tables.push((db, name));
            }
        }
        let cfg = self.cfg.clone();
        match crate::ttl::command(&self.shared, &cfg, cmd, tables).await {
            Ok(n) => self.answer_ok(n, 0).await?,
            Err(e) => self.answer_error(e).await?,
        }
        Ok(None)
    }

    /// `SHOW OBKV HBASE_READS`: the session's setting.
    pub(super) async fn answer_hbase_reads(&mut self) -> Result<(), End> {
        let value = if self.hbase_reads { "ON" } else { "OFF" };
        let rows = vec![vec![
            Some("hbase_reads".to_string()),
            Some(value.to_string()),
        ]];
        self.answer_rows(&["Variable_name", "Value"], &rows).await
    }
}
