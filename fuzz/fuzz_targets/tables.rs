//! The HBase tables the SQL fuzz targets' sessions know (a module of theirs, not a target).

use std::sync::{Arc, OnceLock};

use obkv_proxy::hbase::cells::CellLimits;
use obkv_proxy::hbase::partition::Partitioning;
use obkv_proxy::hbase::schema::{key, Placement, SchemaCache, TableSchema};

/// `hb.g$f`, a KEY(K_PREFIX) table with n = 4 and 97 partitions, and `hb.g$h`, a second family
/// of its group with a blob V (joins of two HBase tables): built once per process.
pub fn cache() -> Arc<SchemaCache> {
    static CACHE: OnceLock<Arc<SchemaCache>> = OnceLock::new();
    CACHE
        .get_or_init(|| {
            let c = SchemaCache::new(std::time::Duration::from_secs(86_400));
            let schema = TableSchema {
                schema: "hb".into(),
                name: "g$f".into(),
                partitioning: Partitioning::Key {
                    prefix_len: Some(4),
                    partitions: 97,
                },
                prefix_column: Some(("K_PREFIX".into(), 4)),
                placement: Placement::OceanBase,
                grouped: true,
                attrs: obkv_proxy::hbase::ttl::Attributes::default(),
                limits: CellLimits {
                    k: Some(16),
                    q: Some(8),
                    v: Some(32),
                    prefix_column: Some("K_PREFIX".into()),
                    columns: ["K", "Q", "T", "V", "K_PREFIX"].map(String::from).to_vec(),
                },
            };
            let mut blob = schema.clone();
            blob.name = "g$h".into();
            blob.limits.v = Some(1 << 20);
            c.put(key(b"hb", b"g$f", true), Some(Arc::new(schema)));
            c.put(key(b"hb", b"g$h", true), Some(Arc::new(blob)));
            Arc::new(c)
        })
        .clone()
}
