//! The HBase tables the SQL fuzz targets' sessions know (a module of theirs, not a target).

use std::sync::{Arc, OnceLock};

use obkv_proxy::engine::prefix_scan::{ConnCharset, TableView};
use obkv_proxy::engine::read::Scope;

use obkv_proxy::hbase::cells::CellLimits;
use obkv_proxy::hbase::partition::Partitioning;
use obkv_proxy::hbase::schema::{key, Placement, SchemaCache, TableSchema};

/// The sessions' scope: HBase tables in `hb`, the current database.
pub fn scope() -> Scope {
    Scope {
        databases: vec!["hb".to_string()].into(),
        current: Some("hb".into()),
        names_ci: true,
    }
}

/// What the sessions know of the tables (`cache`), in `hb`, with the connection's character
/// set as given and settled or not.
pub fn view(charset: Option<ConnCharset>, settled: bool) -> TableView {
    TableView {
        cache: cache(),
        current_db: Some(Some(Arc::from(&b"hb"[..]))),
        charset,
        names_ci: true,
        settled,
        counters: Default::default(),
        blind: Vec::new(),
    }
}

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
