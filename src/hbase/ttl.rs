//! Versions and time to live: which cells of an HBase family OceanBase's TTL task deletes, and
//! the statements a task runs to walk a table in small batches. Pure: no I/O (`crate::ttl`
//! runs them).
//!
//! The rule, as OceanBase 4.x's task applies it to each row it scans in primary-key order
//! (K, Q, then T in the order that puts the newest version of a cell first):
//! 1. a family's `MaxVersions` m > 0 and the row is the n-th version of its (K, Q) with n > m:
//!    deleted (counted as a version deletion);
//! 2. else `TimeToLive` s > 0 and the cell's time plus s seconds is before now (strictly):
//!    deleted (counted as a TTL deletion);
//! 3. else kept. Absent means no limit; `"State": "disable"` switches the family's task off.
//!
//! The cell's time is T read in the deployment's timestamp convention (`negated-ms`: T is
//! −epoch_ms, so the newest version sorts first ascending; `ms`: T is epoch_ms, newest first
//! descending).

use super::catalog::{hex, ident, push_hex};
use super::cells::Convention;

/// A family's `KV_ATTRIBUTES` as far as the task is concerned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attributes {
    /// Seconds a cell lives; None: forever.
    pub time_to_live: Option<u64>,
    /// Versions kept per (K, Q); None: all.
    pub max_versions: Option<u64>,
    /// `"State": "disable"`.
    pub disabled: bool,
}

impl Attributes {
    /// Reads a `KV_ATTRIBUTES` text (already checked by rule R9 when it was written). A text
    /// that does not read as one declares nothing (the task leaves the table alone).
    pub fn parse(json: &str) -> Attributes {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(json) else {
            return Attributes::default();
        };
        let Some(h) = v.get("Hbase").and_then(|h| h.as_object()) else {
            return Attributes::default();
        };
        let positive = |k: &str| h.get(k).and_then(|n| n.as_u64()).filter(|&n| n > 0);
        Attributes {
            time_to_live: positive("TimeToLive"),
            max_versions: positive("MaxVersions"),
            disabled: h.get("State").and_then(|s| s.as_str()) == Some("disable"),
        }
    }

    /// The family declares something the task enforces, and is not switched off.
    pub fn applies(&self) -> bool {
        !self.disabled && (self.time_to_live.is_some() || self.max_versions.is_some())
    }

    /// What the rule does with the `rank`-th newest version (1 = the newest) of its (K, Q),
    /// whose T is `t`, at `now_ms` (epoch milliseconds).
    pub fn verdict(&self, convention: Convention, rank: u64, t: i64, now_ms: i64) -> Verdict {
        if self.max_versions.is_some_and(|m| rank > m) {
            return Verdict::Versions;
        }
        if let Some(s) = self.time_to_live {
            let ttl_ms = i64::try_from(s).unwrap_or(i64::MAX).saturating_mul(1000);
            if cell_ms(convention, t).saturating_add(ttl_ms) < now_ms {
                return Verdict::Expired;
            }
        }
        Verdict::Keep
    }

    /// Epoch milliseconds before which a cell has expired at `now_ms` (None: no TTL).
    pub fn expired_before(&self, now_ms: i64) -> Option<i64> {
        let s = i64::try_from(self.time_to_live?).unwrap_or(i64::MAX);
        Some(now_ms.saturating_sub(s.saturating_mul(1000)))
    }
}

/// The cell time (epoch ms) that T stands for in `convention`.
pub fn cell_ms(convention: Convention, t: i64) -> i64 {
    match convention {
        Convention::NegatedMs => t.saturating_neg(),
        Convention::Ms => t,
    }
}

/// What the rule decides for one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    /// Beyond the newest MaxVersions of its (K, Q).
    Versions,
    /// Older than now − TimeToLive.
    Expired,
}

/// Ranks rows met in walk order: the newest version of each (K, Q) first.
#[derive(Debug, Default)]
pub struct Ranks {
    cell: Option<(Vec<u8>, Vec<u8>)>,
    rank: u64,
}

impl Ranks {
    /// A walk that starts inside (K, Q) after `newer` of its versions (counted by the
    /// backend in the same transaction), or at a cell's start (`newer` 0).
    pub fn resume(k: &[u8], q: &[u8], newer: u64) -> Ranks {
        Ranks {
            cell: Some((k.to_vec(), q.to_vec())),
            rank: newer,
        }
    }

    /// The rank of the next row met (1 = the newest version of its cell).
    pub fn next(&mut self, k: &[u8], q: &[u8]) -> u64 {
        let same = self
            .cell
            .as_ref()
            .is_some_and(|(ck, cq)| ck.as_slice() == k && cq.as_slice() == q);
        if same {
            self.rank = self.rank.saturating_add(1);
        } else {
            self.cell = Some((k.to_vec(), q.to_vec()));
            self.rank = 1;
        }
        self.rank
    }
}

/// A byte string as a literal: `X'…'`, or `_binary''` when empty (seekdb 1.4 misreads an empty
/// hex literal in some positions; an empty qualifier is common in HBase).
pub fn lit(b: &[u8]) -> String {
    if b.is_empty() {
        "_binary''".to_string()
    } else {
        hex(b)
    }
}

/// Where a walk stands: after the row (K, Q, T).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub k: Vec<u8>,
    pub q: Vec<u8>,
    pub t: i64,
}

/// The statements that walk one table (one partition of it) in primary-key order.
pub struct Walk<'a> {
    /// `db`.`table` (UTF-8 names).
    pub table: &'a str,
    /// The partition, or None for the whole table.
    pub partition: Option<&'a str>,
    pub convention: Convention,
}

impl Walk<'_> {
    /// The walk's order: the primary key's, or (`ms`, where the newest version has the largest
    /// T) the primary key's read backwards — one direction for every column, so the backend
    /// walks the index (a mixed order would read and lock the rest of the partition to sort
    /// it) and each cell's newest version still comes first.
    fn order(&self) -> &'static str {
        match self.convention {
            Convention::NegatedMs => "K, Q, T",
            Convention::Ms => "K DESC, Q DESC, T DESC",
        }
    }

    /// The comparison that holds for a key part that comes after another in walk order.
    fn after(&self) -> &'static str {
        match self.convention {
            Convention::NegatedMs => ">",
            Convention::Ms => "<",
        }
    }

    fn from(&self) -> String {
        match self.partition {
            Some(p) => format!("{} PARTITION ({})", self.table, ident(p)),
            None => self.table.to_string(),
        }
    }

    /// The next `limit` rows after `after` (from the start: None), locked until the batch's
    /// transaction ends: K, Q, T.
    pub fn batch(&self, after: Option<&Position>, limit: usize) -> String {
        let mut sql = format!("SELECT K, Q, T FROM {}", self.from());
        if let Some(p) = after {
            let (k, q, a) = (lit(&p.k), lit(&p.q), self.after());
            sql.push_str(&format!(
                " WHERE K {a} {k} OR (K = {k} AND (Q {a} {q} OR (Q = {q} AND T {a} {})))",
                p.t
            ));
        }
        sql.push_str(&format!(
            " ORDER BY {} LIMIT {limit} FOR UPDATE",
            self.order()
        ));
        sql
    }

    /// How many versions of the cell at `at` are newer than it (locked as the batch's rows).
    pub fn newer_versions(&self, at: &Position) -> String {
        let cmp = match self.convention {
            Convention::NegatedMs => "<",
            Convention::Ms => ">",
        };
        format!(
            "SELECT COUNT(*) FROM {} WHERE K = {} AND Q = {} AND T {cmp} {} FOR UPDATE",
            self.from(),
            lit(&at.k),
            lit(&at.q),
            at.t
        )
    }

    /// Deletes exactly these rows (by primary key). None for no rows.
    pub fn delete(&self, rows: &[&Position]) -> Option<Vec<u8>> {
        if rows.is_empty() {
            return None;
        }
        let mut sql = format!("DELETE FROM {} WHERE ", self.from()).into_bytes();
        for (i, r) in rows.iter().enumerate() {
            if i > 0 {
                sql.extend_from_slice(b" OR ");
            }
            sql.extend_from_slice(b"(K = ");
            sql.extend_from_slice(lit(&r.k).as_bytes());
            sql.extend_from_slice(b" AND Q = ");
            sql.extend_from_slice(lit(&r.q).as_bytes());
            sql.extend_from_slice(format!(" AND T = {})", r.t).as_bytes());
        }
        Some(sql)
    }
}

/// Rows the advisor samples of a table to see how many versions and expired cells it keeps.
pub const SAMPLE_ROWS: u32 = 10_000;

/// The advisor's sample of a table (`db`.`name` quoted): rows, cells (K, Q) and expired rows
/// among the first `SAMPLE_ROWS` rows the backend reads, by its clock.
pub fn sample(table: &str, attrs: &Attributes, convention: Convention) -> String {
    let expired = match (attrs.time_to_live, convention) {
        (None, _) => "0".to_string(),
        (Some(s), Convention::NegatedMs) => format!(
            "SUM(CASE WHEN T > -({NOW_MS} - {}) THEN 1 ELSE 0 END)",
            s.saturating_mul(1000).min(i64::MAX as u64 / 2)
        ),
        (Some(s), Convention::Ms) => format!(
            "SUM(CASE WHEN T < {NOW_MS} - {} THEN 1 ELSE 0 END)",
            s.saturating_mul(1000).min(i64::MAX as u64 / 2)
        ),
    };
    format!(
        "SELECT COUNT(*), COUNT(DISTINCT K, Q), {expired} FROM (SELECT K, Q, T FROM {table} LIMIT {SAMPLE_ROWS}) s"
    )
}

/// What a sample shows against the declaration: (rule, evidence, advice) for versions far
/// above MaxVersions (on average more than twice as many, and at least one more) and for a
/// quarter or more of the rows expired.
pub fn sample_findings(
    attrs: &Attributes,
    rows: u64,
    cells: u64,
    expired: u64,
) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    if rows == 0 || cells == 0 {
        return out;
    }
    let per_cell = rows as f64 / cells as f64;
    let task = "the TTL task is off or behind: ttl.enabled = true (with hbase.catalog_user) runs \
                it, ALTER SYSTEM TRIGGER TTL runs it now, ttl.duty_duration each day";
    if let Some(m) = attrs.max_versions {
        if per_cell > 2.0 * m as f64 && per_cell >= m as f64 + 1.0 {
            out.push((
                "versions_kept",
                format!(
                    "{rows} rows sampled hold {cells} cells: {per_cell:.1} versions a cell, MaxVersions is {m}"
                ),
                format!("{task}; meanwhile SET OBKV HBASE_READS = ON reads the newest {m} of each"),
            ));
        }
    }
    if let Some(s) = attrs.time_to_live {
        if expired.saturating_mul(4) >= rows {
            out.push((
                "expired_kept",
                format!(
                    "{expired} of {rows} rows sampled ({:.0}%) are older than TimeToLive {s} s",
                    100.0 * expired as f64 / rows as f64
                ),
                format!("{task}; meanwhile SET OBKV HBASE_READS = ON hides them"),
            ));
        }
    }
    out
}

/// A TTL statement (`ALTER SYSTEM … TTL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Trigger,
    Suspend,
    Resume,
    Cancel,
}

impl Command {
    pub fn from_word(w: &str) -> Option<Command> {
        match w {
            "TRIGGER" => Some(Command::Trigger),
            "SUSPEND" => Some(Command::Suspend),
            "RESUME" => Some(Command::Resume),
            "CANCEL" => Some(Command::Cancel),
            _ => None,
        }
    }
}

/// The daily window in which scheduled runs work (`[HH:MM:SS, HH:MM:SS]`, local time, both
/// ends included, not crossing midnight), as OceanBase's `kv_ttl_duty_duration` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DutyWindow {
    /// Seconds after midnight.
    pub start: u32,
    pub end: u32,
}

impl DutyWindow {
    /// `""` means no scheduled runs (None); anything else that is not a window is an error.
    pub fn parse(s: &str) -> Result<Option<DutyWindow>, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        let bad = || format!("'{s}' is not a duty window like '[01:00:00, 05:00:00]'");
        let inner = s
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .ok_or_else(bad)?;
        let (a, b) = inner.split_once(',').ok_or_else(bad)?;
        let secs = |t: &str| -> Option<u32> {
            let mut it = t.trim().split(':');
            let (h, m, s) = (it.next()?, it.next()?, it.next()?);
            if it.next().is_some() {
                return None;
            }
            let (h, m, s): (u32, u32, u32) = (h.parse().ok()?, m.parse().ok()?, s.parse().ok()?);
            (h < 24 && m < 60 && s < 60).then_some(h * 3600 + m * 60 + s)
        };
        let (start, end) = (secs(a).ok_or_else(bad)?, secs(b).ok_or_else(bad)?);
        if start > end {
            return Err(format!("'{s}': the window's start is after its end"));
        }
        Ok(Some(DutyWindow { start, end }))
    }

    pub fn contains(&self, seconds_of_day: u32) -> bool {
        (self.start..=self.end).contains(&seconds_of_day)
    }
}

/// The backend's clock in epoch milliseconds (both servers read `NOW(3)` in their time zone
/// and `UNIX_TIMESTAMP` undoes it).
pub const NOW_MS: &str = "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)";

/// A task row's status, as OceanBase names them.
pub mod status {
    pub const PREPARED: &str = "PREPARED";
    pub const RUNNING: &str = "RUNNING";
    /// Suspended (`ALTER SYSTEM SUSPEND TTL`).
    pub const PENDING: &str = "PENDING";
    pub const CANCELED: &str = "CANCELED";
    pub const FINISHED: &str = "FINISHED";
}

/// What one batch (or a whole task) did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub scanned: u64,
    pub expired: u64,
    pub versions: u64,
}

impl Counts {
    pub fn add(&mut self, o: Counts) {
        self.scanned += o.scanned;
        self.expired += o.expired;
        self.versions += o.versions;
    }
}

/// A table's key in the task tables: its schema and name (UTF-8, as information_schema
/// keeps them) joined by a zero byte.
pub fn table_key(schema: &[u8], name: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(schema.len() + name.len() + 1);
    k.extend_from_slice(schema);
    k.push(0);
    k.extend_from_slice(name);
    k
}

/// A task to create: one per partition of a table ('' for an unpartitioned table).
pub struct NewTask<'a> {
    pub schema: &'a [u8],
    pub name: &'a [u8],
    pub partition: &'a str,
}

/// The catalog's task tables (`kv_ttl_tasks`, `kv_ttl_task_history`, `kv_ttl_leases`) and
/// the statements on them. Every value goes in as a hex literal or a number.
pub struct TaskTables<'a> {
    pub schema: &'a str,
}

const TASK_COLUMNS: &str = "table_key, partition_name, table_schema, table_name, task_id, \
     trigger_type, status, start_ms, update_ms, ttl_del_cnt, max_version_del_cnt, scan_cnt, ret_code";

impl TaskTables<'_> {
    fn t(&self, table: &str) -> String {
        format!("{}.{table}", ident(self.schema))
    }

    pub fn ensure(&self) -> Vec<String> {
        let common = "table_key VARBINARY(520) NOT NULL, partition_name VARBINARY(256) NOT NULL, \
             table_schema VARBINARY(256) NOT NULL, table_name VARBINARY(256) NOT NULL, \
             task_id BIGINT NOT NULL, trigger_type VARCHAR(16) NOT NULL, status VARCHAR(16) NOT NULL, \
             start_ms BIGINT NOT NULL, update_ms BIGINT NOT NULL, \
             ttl_del_cnt BIGINT NOT NULL DEFAULT 0, max_version_del_cnt BIGINT NOT NULL DEFAULT 0, \
             scan_cnt BIGINT NOT NULL DEFAULT 0, ret_code VARCHAR(64) NOT NULL DEFAULT 'OB_SUCCESS'";
        vec![
            format!("CREATE DATABASE IF NOT EXISTS {}", ident(self.schema)),
            format!(
                "CREATE TABLE IF NOT EXISTS {} ({common}, ck_k BLOB NULL, ck_q BLOB NULL, ck_t BIGINT NULL, \
                 PRIMARY KEY (table_key, partition_name))",
                self.t("kv_ttl_tasks")
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {} ({common}, PRIMARY KEY (table_key, partition_name, task_id))",
                self.t("kv_ttl_task_history")
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {} (table_key VARBINARY(520) NOT NULL PRIMARY KEY, \
                 holder VARCHAR(128) NOT NULL, expires_ms BIGINT NOT NULL)",
                self.t("kv_ttl_leases")
            ),
        ]
    }

    /// `oceanbase.DBA_OB_KV_TTL_TASKS` and `…_TASK_HISTORY` over the task tables, with
    /// OceanBase's columns (TABLE_ID and TABLET_ID are NULL: these backends have none) and the
    /// database and partition beside them. `invoker`: read with the reader's rights (MariaDB);
    /// seekdb takes no SQL SECURITY clause.
    pub fn views(&self, invoker: bool) -> Vec<String> {
        let security = if invoker { "SQL SECURITY INVOKER " } else { "" };
        let view = |name: &str, table: &str| {
            format!(
                "CREATE OR REPLACE {security}VIEW oceanbase.{name} AS SELECT \
                 CONVERT(table_schema USING utf8mb4) AS DATABASE_NAME, \
                 CONVERT(table_name USING utf8mb4) AS TABLE_NAME, NULL AS TABLE_ID, NULL AS TABLET_ID, \
                 NULLIF(CONVERT(partition_name USING utf8mb4), '') AS PARTITION_NAME, task_id AS TASK_ID, \
                 FROM_UNIXTIME(start_ms / 1000) AS START_TIME, FROM_UNIXTIME(update_ms / 1000) AS END_TIME, \
                 trigger_type AS TRIGGER_TYPE, status AS STATUS, ttl_del_cnt AS TTL_DEL_CNT, \
                 max_version_del_cnt AS MAX_VERSION_DEL_CNT, scan_cnt AS SCAN_CNT, ret_code AS RET_CODE, \
                 'NORMAL' AS TASK_TYPE FROM {}",
                self.t(table)
            )
        };
        vec![
            "CREATE DATABASE IF NOT EXISTS oceanbase".to_string(),
            view("DBA_OB_KV_TTL_TASKS", "kv_ttl_tasks"),
            view("DBA_OB_KV_TTL_TASK_HISTORY", "kv_ttl_task_history"),
        ]
    }

    /// Creates these tasks (a task that exists for a partition is left as it is).
    pub fn insert(&self, tasks: &[NewTask], trigger: &str, now_ms: i64) -> Option<Vec<u8>> {
        if tasks.is_empty() {
            return None;
        }
        let mut sql = format!(
            "INSERT IGNORE INTO {} ({TASK_COLUMNS}) VALUES ",
            self.t("kv_ttl_tasks")
        )
        .into_bytes();
        for (i, t) in tasks.iter().enumerate() {
            if i > 0 {
                sql.push(b',');
            }
            sql.push(b'(');
            push_hex(&mut sql, &table_key(t.schema, t.name));
            sql.push(b',');
            sql.extend_from_slice(lit(t.partition.as_bytes()).as_bytes());
            sql.push(b',');
            push_hex(&mut sql, t.schema);
            sql.push(b',');
            push_hex(&mut sql, t.name);
            sql.extend_from_slice(
                format!(
                    ",{now_ms},'{trigger}','{}',{now_ms},{now_ms},0,0,0,'OB_SUCCESS')",
                    status::PREPARED
                )
                .as_bytes(),
            );
        }
        Some(sql)
    }

    /// Any task row, the others locked too (TRIGGER refuses while one exists; CANCEL locks
    /// them before it moves them): its status.
    pub fn any_task(&self) -> String {
        format!(
            "SELECT status FROM {} ORDER BY status = '{}' FOR UPDATE",
            self.t("kv_ttl_tasks"),
            status::PENDING
        )
    }

    /// The tasks left to run: table key, schema, name, partition, trigger type.
    pub fn open_tasks(&self) -> String {
        format!(
            "SELECT table_key, table_schema, table_name, partition_name, trigger_type FROM {} \
             WHERE status IN ('{}', '{}') ORDER BY table_key, partition_name",
            self.t("kv_ttl_tasks"),
            status::PREPARED,
            status::RUNNING
        )
    }

    fn row(&self, key: &[u8], partition: &str) -> String {
        format!(
            "table_key = {} AND partition_name = {}",
            lit(key),
            lit(partition.as_bytes())
        )
    }

    /// One task, locked for its batch: status, ck_k, ck_q, ck_t.
    pub fn task(&self, key: &[u8], partition: &str) -> String {
        format!(
            "SELECT status, ck_k, ck_q, ck_t FROM {} WHERE {} FOR UPDATE",
            self.t("kv_ttl_tasks"),
            self.row(key, partition)
        )
    }

    /// A batch done: the walk's position and the counts.
    pub fn progress(
        &self,
        key: &[u8],
        partition: &str,
        at: &Position,
        c: Counts,
        now_ms: i64,
    ) -> String {
        format!(
            "UPDATE {} SET status = '{}', ck_k = {}, ck_q = {}, ck_t = {}, update_ms = {now_ms}, \
             scan_cnt = scan_cnt + {}, ttl_del_cnt = ttl_del_cnt + {}, \
             max_version_del_cnt = max_version_del_cnt + {} WHERE {}",
            self.t("kv_ttl_tasks"),
            status::RUNNING,
            lit(&at.k),
            lit(&at.q),
            at.t,
            c.scanned,
            c.expired,
            c.versions,
            self.row(key, partition)
        )
    }

    /// A task ended (its last batch's counts added): moved to the history. Two statements,
    /// for one transaction. `which`: one task, or every task (CANCEL).
    pub fn end(
        &self,
        which: Option<(&[u8], &str)>,
        end_status: &str,
        ret_code: &str,
        c: Counts,
        now_ms: i64,
    ) -> [String; 2] {
        let filter = match which {
            Some((k, p)) => format!(" WHERE {}", self.row(k, p)),
            None => String::new(),
        };
        let ret = ret_code.replace(['\'', '\\'], "");
        [
            format!(
                "INSERT INTO {} ({TASK_COLUMNS}) SELECT table_key, partition_name, table_schema, \
                 table_name, task_id, trigger_type, '{end_status}', start_ms, {now_ms}, \
                 ttl_del_cnt + {}, max_version_del_cnt + {}, scan_cnt + {}, '{ret}' FROM {}{filter}",
                self.t("kv_ttl_task_history"),
                c.expired,
                c.versions,
                c.scanned,
                self.t("kv_ttl_tasks")
            ),
            format!("DELETE FROM {}{filter}", self.t("kv_ttl_tasks")),
        ]
    }

    /// SUSPEND / RESUME: every task in `from` goes to `to`.
    pub fn set_status(&self, from: &[&str], to: &str) -> String {
        let from: Vec<String> = from.iter().map(|s| format!("'{s}'")).collect();
        format!(
            "UPDATE {} SET status = '{to}' WHERE status IN ({})",
            self.t("kv_ttl_tasks"),
            from.join(", ")
        )
    }

    /// When each table's latest task started (open or in the history): table key, task id.
    pub fn last_started(&self) -> String {
        format!(
            "SELECT table_key, MAX(task_id) FROM (SELECT table_key, task_id FROM {} UNION ALL \
             SELECT table_key, task_id FROM {}) x GROUP BY table_key",
            self.t("kv_ttl_tasks"),
            self.t("kv_ttl_task_history")
        )
    }

    /// The table's lease, locked: holder, expiry, and the backend's clock.
    pub fn lease(&self, key: &[u8]) -> String {
        format!(
            "SELECT holder, expires_ms, {NOW_MS} FROM {} WHERE table_key = {} FOR UPDATE",
            self.t("kv_ttl_leases"),
            hex(key)
        )
    }

    /// A lease for a table that has none.
    pub fn lease_insert(&self, key: &[u8], holder: &str, until_ms: i64) -> String {
        format!(
            "INSERT INTO {} (table_key, holder, expires_ms) VALUES ({}, {}, {until_ms})",
            self.t("kv_ttl_leases"),
            hex(key),
            hex(holder.as_bytes())
        )
    }

    /// The lease taken (run out or this holder's) or renewed.
    pub fn lease_take(&self, key: &[u8], holder: &str, until_ms: i64) -> String {
        format!(
            "UPDATE {} SET holder = {}, expires_ms = {until_ms} WHERE table_key = {}",
            self.t("kv_ttl_leases"),
            hex(holder.as_bytes()),
            hex(key)
        )
    }

    /// The lease given up, if this holder still has it.
    pub fn lease_release(&self, key: &[u8], holder: &str) -> String {
        format!(
            "UPDATE {} SET expires_ms = 0 WHERE table_key = {} AND holder = {}",
            self.t("kv_ttl_leases"),
            hex(key),
            hex(holder.as_bytes())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    #[test]
    fn attributes_read_as_declared() {
        let a = Attributes::parse(r#"{"Hbase": {"TimeToLive": 10, "MaxVersions": 2}}"#);
        assert_eq!(a.time_to_live, Some(10));
        assert_eq!(a.max_versions, Some(2));
        assert!(a.applies());
        let off = Attributes::parse(r#"{"Hbase": {"TimeToLive": 10, "State": "disable"}}"#);
        assert!(off.disabled && !off.applies());
        assert!(!Attributes::parse(r#"{"Hbase": {}}"#).applies());
        assert!(!Attributes::parse("not json").applies());
        assert!(!Attributes::parse(r#"{"Hbase": {"TimeToLive": 0}}"#).applies());
    }

    #[test]
    fn versions_are_checked_before_age() {
        let a = Attributes {
            time_to_live: Some(10),
            max_versions: Some(2),
            disabled: false,
        };
        let conv = Convention::NegatedMs;
        // fresh: kept while among the newest two
        assert_eq!(a.verdict(conv, 1, -(NOW - 1000), NOW), Verdict::Keep);
        assert_eq!(a.verdict(conv, 2, -(NOW - 2000), NOW), Verdict::Keep);
        assert_eq!(a.verdict(conv, 3, -(NOW - 3000), NOW), Verdict::Versions);
        // old and beyond the versions: counted as a version deletion
        assert_eq!(a.verdict(conv, 3, -(NOW - 60_000), NOW), Verdict::Versions);
        assert_eq!(a.verdict(conv, 1, -(NOW - 60_000), NOW), Verdict::Expired);
        // strictly before now − TTL
        assert_eq!(a.verdict(conv, 1, -(NOW - 10_000), NOW), Verdict::Keep);
        assert_eq!(a.verdict(conv, 1, -(NOW - 10_001), NOW), Verdict::Expired);
        // the positive convention
        assert_eq!(
            a.verdict(Convention::Ms, 1, NOW - 10_001, NOW),
            Verdict::Expired
        );
        assert_eq!(
            a.verdict(Convention::Ms, 1, NOW - 9_999, NOW),
            Verdict::Keep
        );
        // a cell from 1970 and one from the far future
        assert_eq!(a.verdict(conv, 1, 0, NOW), Verdict::Expired);
        assert_eq!(a.verdict(conv, 1, i64::MIN, NOW), Verdict::Keep);
        let huge = Attributes {
            time_to_live: Some(u64::MAX),
            ..Attributes::default()
        };
        assert_eq!(huge.verdict(conv, 9, 0, NOW), Verdict::Keep);
    }

    #[test]
    fn ranks_count_versions_per_cell() {
        let mut r = Ranks::default();
        assert_eq!(r.next(b"a", b"x"), 1);
        assert_eq!(r.next(b"a", b"x"), 2);
        assert_eq!(r.next(b"a", b"y"), 1);
        assert_eq!(r.next(b"b", b"y"), 1);
        let mut r = Ranks::resume(b"b", b"y", 4);
        assert_eq!(r.next(b"b", b"y"), 5);
        assert_eq!(r.next(b"c", b""), 1);
    }

    #[test]
    fn statements_walk_in_primary_key_order() {
        let w = Walk {
            table: "`d`.`g$f`",
            partition: Some("p3"),
            convention: Convention::NegatedMs,
        };
        assert_eq!(
            w.batch(None, 100),
            "SELECT K, Q, T FROM `d`.`g$f` PARTITION (`p3`) ORDER BY K, Q, T LIMIT 100 FOR UPDATE"
        );
        let at = Position {
            k: b"k'".to_vec(),
            q: vec![0],
            t: -5,
        };
        assert_eq!(
            w.batch(Some(&at), 2),
            "SELECT K, Q, T FROM `d`.`g$f` PARTITION (`p3`) WHERE K > X'6B27' OR (K = X'6B27' AND (Q > X'00' OR (Q = X'00' AND T > -5))) ORDER BY K, Q, T LIMIT 2 FOR UPDATE"
        );
        assert!(w.newer_versions(&at).ends_with("AND T < -5 FOR UPDATE"));
        let ms = Walk {
            table: "`d`.`t`",
            partition: None,
            convention: Convention::Ms,
        };
        assert_eq!(
            ms.batch(Some(&at), 2),
            "SELECT K, Q, T FROM `d`.`t` WHERE K < X'6B27' OR (K = X'6B27' AND (Q < X'00' OR (Q = X'00' AND T < -5))) ORDER BY K DESC, Q DESC, T DESC LIMIT 2 FOR UPDATE"
        );
        let empty = Position {
            k: b"k".to_vec(),
            q: Vec::new(),
            t: 1,
        };
        assert!(w.newer_versions(&empty).contains("Q = _binary''"));
        assert!(ms.newer_versions(&at).contains("T > -5"));
        assert_eq!(w.delete(&[]), None);
        let b = Position {
            k: b"z".to_vec(),
            q: b"q".to_vec(),
            t: 7,
        };
        assert_eq!(
            String::from_utf8(w.delete(&[&at, &b]).unwrap_or_default()).unwrap_or_default(),
            "DELETE FROM `d`.`g$f` PARTITION (`p3`) WHERE (K = X'6B27' AND Q = X'00' AND T = -5) OR (K = X'7A' AND Q = X'71' AND T = 7)"
        );
    }

    #[test]
    fn samples_far_above_the_declaration_are_findings() {
        let a = Attributes {
            time_to_live: Some(10),
            max_versions: Some(2),
            disabled: false,
        };
        assert!(sample_findings(&a, 0, 0, 0).is_empty());
        // two versions a cell, a few expired: as declared
        assert!(sample_findings(&a, 200, 100, 10).is_empty());
        let f = sample_findings(&a, 500, 100, 400);
        let rules: Vec<&str> = f.iter().map(|x| x.0).collect();
        assert_eq!(rules, ["versions_kept", "expired_kept"]);
        assert!(f[0].1.contains("5.0 versions a cell"), "{}", f[0].1);
        assert!(sample("`d`.`t`", &a, Convention::NegatedMs)
            .contains("T > -(CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - 10000)"));
    }

    #[test]
    fn duty_windows() {
        assert_eq!(DutyWindow::parse(""), Ok(None));
        let w = DutyWindow::parse("[01:00:00, 05:30:00]").ok().flatten();
        assert_eq!(
            w,
            Some(DutyWindow {
                start: 3600,
                end: 5 * 3600 + 1800
            })
        );
        let w = w.unwrap_or(DutyWindow { start: 0, end: 0 });
        assert!(w.contains(3600) && w.contains(5 * 3600 + 1800) && !w.contains(3599));
        assert!(DutyWindow::parse("[05:00:00, 01:00:00]").is_err());
        assert!(DutyWindow::parse("01:00:00, 05:00:00").is_err());
        assert!(DutyWindow::parse("[24:00:00, 24:00:00]").is_err());
    }
}
