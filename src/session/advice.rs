//! `SHOW OBKV ADVICE [FOR t]` and `SHOW OBKV PARTITIONS FOR t`: the rowkey advisor's view of
//! the tables this user may see. A table is listed only when the backend shows it to the user
//! (information_schema, as the user); its rowkeys appear only when the user may read it
//! (EXPLAIN of a SELECT on it succeeds: the backend's own SELECT privilege check, which runs
//! nothing and reads nothing).

use super::catalog::cell;
use super::{End, Session};
use crate::admin::advisor;
use crate::hbase::catalog;
use crate::sql::ddl::TableName;

impl Session {
    /// Whether the backend shows the table to this user, and whether the user may read it.
    async fn table_access(&mut self, db: &str, name: &str) -> Result<(bool, bool), End> {
        let listed = match self
            .rows(&catalog::table_partitioning(db.as_bytes(), name.as_bytes()))
            .await?
        {
            Ok(r) => !r.is_empty(),
            Err(_) => false,
        };
        if !listed {
            return Ok((false, false));
        }
        let readable = self.rows(&catalog::readable_probe(db, name)).await?.is_ok();
        Ok((true, readable))
    }

    /// The database and table a command names (the current database when it names none).
    async fn named(&mut self, t: &TableName) -> Result<Option<(String, String)>, End> {
        let name = String::from_utf8_lossy(&t.raw_name).into_owned();
        let db = match &t.raw_schema {
            Some(db) => String::from_utf8_lossy(db).into_owned(),
            None => match self.rows("SELECT DATABASE()").await? {
                Ok(r) => match r.first() {
                    Some(row) if !cell(row, 0).is_empty() => {
                        String::from_utf8_lossy(cell(row, 0)).into_owned()
                    }
                    _ => return Ok(None),
                },
                Err(_) => return Ok(None),
            },
        };
        Ok(Some((db, name)))
    }

    /// The advisor's tables this user may see, matching `only` when given: (db, table, readable).
    async fn advised_tables(
        &mut self,
        only: Option<&(String, String)>,
    ) -> Result<Vec<(String, String, bool)>, End> {
        let ci = self.names_ci;
        let same = |a: &str, b: &str| {
            if ci {
                a.eq_ignore_ascii_case(b)
            } else {
                a == b
            }
        };
        // every statement answered before this one is in what is read
        advisor::sync(std::time::Duration::from_secs(2)).await;
        let mut out = Vec::new();
        for (db, name) in advisor::tables() {
            if let Some((d, n)) = only {
                if !same(d, &db) || !same(n, &name) {
                    continue;
                }
            }
            let (listed, readable) = self.table_access(&db, &name).await?;
            if listed {
                out.push((db, name, readable));
            }
        }
        Ok(out)
    }

    pub(super) async fn answer_obkv_advice(&mut self, t: Option<TableName>) -> Result<(), End> {
        let only = match &t {
            Some(t) => match self.named(t).await? {
                Some(n) => Some(n),
                None => return self.answer_advice_rows(Vec::new()).await,
            },
            None => None,
        };
        let tables = self.advised_tables(only.as_ref()).await?;
        let visible = |db: &str, name: &str| tables.iter().any(|(d, n, _)| d == db && n == name);
        let readable =
            |db: &str, name: &str| tables.iter().any(|(d, n, r)| *r && d == db && n == name);
        let reports = advisor::report(visible, readable, false);
        let mut rows: Vec<Vec<Option<String>>> = Vec::new();
        // what a table keeps against its TimeToLive and MaxVersions: sampled (as the user) from
        // the tables the user may read, the one named too when the advisor saw no traffic
        let mut sampled: Vec<(String, String)> = tables
            .iter()
            .filter(|t| t.2)
            .map(|(d, n, _)| (d.clone(), n.clone()))
            .collect();
        if let Some((d, n)) = &only {
            if !sampled.iter().any(|(a, b)| a == d && b == n) && self.table_access(d, n).await?.1 {
                sampled.push((d.clone(), n.clone()));
            }
        }
        let mut kept_rows: Vec<Vec<Option<String>>> = Vec::new();
        let mut with_findings: Vec<String> = Vec::new();
        for (db, name) in &sampled {
            let Some(attrs) = self.declared_attrs(db.as_bytes(), name.as_bytes()).await? else {
                continue;
            };
            if attrs.time_to_live.is_none() && attrs.max_versions.is_none() {
                continue;
            }
            let table = format!("{}.{}", catalog::ident(db), catalog::ident(name));
            let sql = crate::hbase::ttl::sample(&table, &attrs, self.cfg.hbase.timestamp);
            let Ok(r) = self.rows(&sql).await? else {
                continue;
            };
            let n = |i| {
                r.first()
                    .and_then(|row| std::str::from_utf8(cell(row, i)).ok()?.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            let label = format!("{db}.{name}");
            for (rule, evidence, advice) in
                crate::hbase::ttl::sample_findings(&attrs, n(0), n(1), n(2))
            {
                with_findings.push(label.clone());
                kept_rows.push(vec![
                    Some(label.clone()),
                    Some(rule.into()),
                    Some(evidence),
                    Some(advice),
                    None,
                ]);
            }
        }
        for r in reports {
            let label = format!("{}.{}", r.database, r.table);
            if r.findings.is_empty() && with_findings.contains(&label) {
                continue;
            }
            if r.findings.is_empty() {
                rows.push(vec![
                    Some(label),
                    Some("ok".into()),
                    Some(format!(
                        "{} writes, {} gets, {} scans seen ({}); nothing the guides warn of",
                        r.writes, r.gets, r.scans, r.partitioning
                    )),
                    Some(String::new()),
                    None,
                ]);
                continue;
            }
            for f in r.findings {
                rows.push(vec![
                    Some(label.clone()),
                    Some(f.rule.to_string()),
                    Some(f.evidence),
                    Some(f.advice),
                    f.ddl,
                ]);
            }
        }
        rows.extend(kept_rows);
        self.answer_advice_rows(rows).await
    }

    async fn answer_advice_rows(&mut self, rows: Vec<Vec<Option<String>>>) -> Result<(), End> {
        self.answer_rows(&["table", "rule", "evidence", "advice", "ddl"], &rows)
            .await
    }

    pub(super) async fn answer_obkv_partitions(&mut self, t: TableName) -> Result<(), End> {
        let Some(only) = self.named(&t).await? else {
            return self.answer_partition_rows(Vec::new()).await;
        };
        let tables = self.advised_tables(Some(&only)).await?;
        let visible = |db: &str, name: &str| tables.iter().any(|(d, n, _)| d == db && n == name);
        let reports = advisor::report(visible, |_, _| false, false);
        let mut rows: Vec<Vec<Option<String>>> = Vec::new();
        if let Some(r) = reports.first() {
            let (rr, rw) = &r.recent;
            let (tr, tw) = &r.total;
            for i in 0..tw.len() {
                let v = |c: &Vec<u64>| c.get(i).map(u64::to_string);
                rows.push(vec![Some(format!("p{i}")), v(rr), v(rw), v(tr), v(tw)]);
            }
        }
        self.answer_partition_rows(rows).await
    }

    async fn answer_partition_rows(&mut self, rows: Vec<Vec<Option<String>>>) -> Result<(), End> {
        self.answer_rows(
            &[
                "partition",
                "reads_recent",
                "writes_recent",
                "reads_total",
                "writes_total",
            ],
            &rows,
        )
        .await
    }
}
